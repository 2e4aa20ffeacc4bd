/// "127.0.0.1:8080" or "[::1]:8080": how errors and requests write an address.
func addressText(host: String, port: Int) -> String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}
