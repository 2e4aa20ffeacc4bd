import JSONCore

extension ServiceAccount {
    /// The file as Google writes it — every member in Google's order, the ones the sender ignores
    /// filled in the way Google fills them — so the simulator hands out a file a real client library
    /// would take too. `clientID` is the account's numeric ID.
    public func googleLayoutJSON(clientID: String) -> [UInt8] {
        let escapedEmail = clientEmail.split(separator: "@", omittingEmptySubsequences: false).joined(separator: "%40")
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string(Self.type)
        writer.key("project_id"); writer.string(projectID)
        writer.key("private_key_id"); writer.string(privateKeyID)
        writer.key("private_key"); writer.string(privateKeyPEM)
        writer.key("client_email"); writer.string(clientEmail)
        writer.key("client_id"); writer.string(clientID)
        writer.key("auth_uri"); writer.string("https://accounts.google.com/o/oauth2/auth")
        writer.key("token_uri"); writer.string(tokenURI)
        writer.key("auth_provider_x509_cert_url"); writer.string("https://www.googleapis.com/oauth2/v1/certs")
        writer.key("client_x509_cert_url"); writer.string("https://www.googleapis.com/robot/v1/metadata/x509/" + escapedEmail)
        writer.key("universe_domain"); writer.string("googleapis.com")
        writer.endObject()
        return writer.bytes + [UInt8(ascii: "\n")]
    }
}
