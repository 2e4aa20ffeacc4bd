#if canImport(Glibc)
import Glibc
#endif
import CMbedTLS

/// Why a TLS stream could not be set up or failed: mbedTLS's text for the code, or each reason the
/// server's certificate was refused. HTTP2 passes it on as `TransportError.tls(message)`.
package struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String

    package init(_ message: String) { self.message = message }

    package var description: String { message }
}

/// mbedTLS over one non-blocking socket, on a `TLSConfiguration` (so the configuration's C pointer
/// never leaves this module). Owns the socket once `init` has returned (not before: if `init`
/// throws, the caller still owns `fd` and closes it), and the ssl context; confined to the thread
/// of the connection that owns it.
package final class TLSStream {
    private let net: UnsafeMutablePointer<mbedtls_net_context>
    private let ssl: UnsafeMutablePointer<mbedtls_ssl_context>
    private let configuration: TLSConfiguration  // keeps the config alive while ssl points at it
    /// The name the client checks the certificate against (the host or `--server-name`).
    private let serverName: String?
    /// True when `serverName` is an IP address: mbedTLS 2.28 compares the host name only with the
    /// CN and dNSName entries, so `verify` matches it against the iPAddress entries instead.
    private let serverNameIsAddress: Bool
    /// The server certificate's names, recorded while verifying it, for the failure message.
    private var peerNames: CertificateNames?

    package var fileDescriptor: Int32 { net.pointee.fd }

    package enum Progress { case done, wantRead, wantWrite, failed(TLSError) }
    package enum IO { case bytes(Int), wouldBlock, closed, failed(TLSError) }

    /// Wraps `fd`; `serverName` is sent as SNI and checked against the certificate (client side).
    /// An IP address is not sent as SNI (RFC 6066 §3) and is matched with the iPAddress entries.
    package init(fd: Int32, configuration: TLSConfiguration, serverName: String?) throws(TLSError) {
        self.configuration = configuration
        self.serverName = serverName
        serverNameIsAddress = serverName.map(CertificateNames.isIPAddress) ?? false
        net = .allocate(capacity: 1)
        ssl = .allocate(capacity: 1)
        // net.fd stays -1 (mbedtls_net_init) until nothing can fail any more: a throw below runs
        // deinit, and mbedtls_net_free there must not close the fd its caller is about to close.
        mbedtls_net_init(net)
        mbedtls_ssl_init(ssl)
        try MbedTLS.check(mbedtls_ssl_setup(ssl, configuration.sslConfig)) { TLSError(MbedTLSLibrary.describe($0)) }
        if let serverName, !serverNameIsAddress {
            let length = serverName.utf8.count
            guard length <= Int(MBEDTLS_SSL_MAX_HOST_NAME_LEN) else {
                throw TLSError("the server name is \(length) bytes long, and a TLS server name has at most \(MBEDTLS_SSL_MAX_HOST_NAME_LEN); "
                               + "pass the host name the certificate is for with --server-name")
            }
            try MbedTLS.check(mbedtls_ssl_set_hostname(ssl, serverName)) { TLSError("server name \(serverName): \(MbedTLSLibrary.describe($0))") }
        }
        if configuration.role == .client {
            // Unretained: the ssl context, and so the callback's use of self, never outlives self.
            mbedtls_ssl_set_verify(ssl, TLSStream.verify, Unmanaged.passUnretained(self).toOpaque())
        }
        mbedtls_ssl_set_bio(ssl, net, TLSStream.send, mbedtls_net_recv, nil)
        net.pointee.fd = fd
    }

    deinit {
        mbedtls_ssl_free(ssl)
        mbedtls_net_free(net)  // closes the socket, if init got as far as taking it
        ssl.deallocate()
        net.deallocate()
    }

    package func handshake() -> Progress {
        do {
            try MbedTLS.check(mbedtls_ssl_handshake(ssl))
            return .done
        } catch {
            switch error.code {
            case MBEDTLS_ERR_SSL_WANT_READ: return .wantRead
            case MBEDTLS_ERR_SSL_WANT_WRITE: return .wantWrite
            default:
                let flags = mbedtls_ssl_get_verify_result(ssl)
                if flags != 0 && flags != UInt32.max { return .failed(TLSError(verificationFailure(flags))) }
                return .failed(TLSError(error.description))
            }
        }
    }

    /// Called by mbedTLS for each certificate of the server's chain, after its own checks, with
    /// their result in `flags`; depth 0 is the server's own certificate. Records its names, and for
    /// an IP address as server name adds a name mismatch unless an iPAddress entry equals it (chain,
    /// validity and the rest stay mbedTLS's verdict: nothing here clears a flag).
    private static let verify: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<mbedtls_x509_crt>?, Int32,
                                               UnsafeMutablePointer<UInt32>?) -> Int32 = { context, certificate, depth, flags in
        guard depth == 0, let context, let certificate, let flags else { return 0 }
        let stream = Unmanaged<TLSStream>.fromOpaque(context).takeUnretainedValue()
        let names = CertificateNames(certificate)
        stream.peerNames = names
        if stream.serverNameIsAddress, let address = stream.serverName, !names.contains(ipAddress: address) {
            flags.pointee |= UInt32(MBEDTLS_X509_BADCERT_CN_MISMATCH)
        }
        return 0
    }

    /// Each reason the server's certificate was refused, with what it saw and what to pass.
    private func verificationFailure(_ flags: UInt32) -> String {
        let names = peerNames ?? CertificateNames()
        var causes: [String] = []
        var explained: UInt32 = 0
        func cause(_ flag: Int32, _ text: @autoclosure () -> String) {
            guard flags & UInt32(flag) != 0 else { return }
            explained |= UInt32(flag)
            causes.append(text())
        }
        cause(MBEDTLS_X509_BADCERT_EXPIRED, "the server's certificate expired at \(names.validUntil) (or this machine's clock is wrong)")
        cause(MBEDTLS_X509_BADCERT_FUTURE, "the server's certificate is not valid before \(names.validFrom) (or this machine's clock is wrong)")
        cause(MBEDTLS_X509_BADCERT_NOT_TRUSTED, "it was issued by \(names.issuer.isEmpty ? "a CA" : names.issuer), "
              + "which is not among the trusted CAs (\(configuration.trustedCAs ?? "none")); pass the issuing CA with --ca-file")
        cause(MBEDTLS_X509_BADCERT_CN_MISMATCH, "the certificate is for \(names.summary), not \(serverName ?? "the name connected to"); "
              + "pass --server-name NAME or connect by that name")
        let rest = flags & ~explained
        if rest != 0 {
            var buffer = [CChar](repeating: 0, count: 512)
            MbedTLS.ignore(mbedtls_x509_crt_verify_info(&buffer, buffer.count, "", rest), because: "a list longer than the buffer is cut short, which only shortens the message")
            causes.append(CStringBuffer.string(buffer).split(separator: "\n").joined(separator: "; "))
        }
        return "certificate verification failed: " + causes.joined(separator: "; ")
    }

    /// The protocol ALPN chose, e.g. "h2".
    package var negotiatedProtocol: String? {
        guard let name = mbedtls_ssl_get_alpn_protocol(ssl) else { return nil }
        return String(cString: name)
    }

    package func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> IO {
        do {
            let count = try MbedTLS.count(mbedtls_ssl_read(ssl, buffer, capacity))
            return count > 0 ? .bytes(count) : .closed
        } catch {
            switch error.code {
            case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY: return .closed
            case MBEDTLS_ERR_SSL_WANT_READ, MBEDTLS_ERR_SSL_WANT_WRITE: return .wouldBlock
            case MBEDTLS_ERR_NET_CONN_RESET: return .closed
            default: return .failed(TLSError(error.description))
            }
        }
    }

    /// Writes up to `count` bytes. After `.wouldBlock` the caller must retry with the same length.
    package func write(_ buffer: UnsafePointer<UInt8>, count: Int) -> IO {
        do {
            return .bytes(try MbedTLS.count(mbedtls_ssl_write(ssl, buffer, count)))
        } catch {
            switch error.code {
            case MBEDTLS_ERR_SSL_WANT_READ, MBEDTLS_ERR_SSL_WANT_WRITE: return .wouldBlock
            case MBEDTLS_ERR_NET_CONN_RESET: return .closed
            default: return .failed(TLSError(error.description))
            }
        }
    }

    /// The BIO send: like mbedtls_net_send but with MSG_NOSIGNAL, so a peer that went away is an
    /// error code (EPIPE) instead of a SIGPIPE that kills the process.
    private static let send: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int) -> Int32 = { context, buffer, length in
        let fd = context!.assumingMemoryBound(to: mbedtls_net_context.self).pointee.fd
        let sent = Glibc.send(fd, buffer, length, Int32(MSG_NOSIGNAL))
        if sent >= 0 { return Int32(sent) }
        switch errno {
        case EAGAIN, EINTR: return MBEDTLS_ERR_SSL_WANT_WRITE
        case EPIPE, ECONNRESET: return MBEDTLS_ERR_NET_CONN_RESET
        default: return MBEDTLS_ERR_NET_SEND_FAILED
        }
    }

    /// Sends close_notify (best effort) before the socket closes.
    package func closeNotify() {
        MbedTLS.ignore(mbedtls_ssl_close_notify(ssl), because: "best effort: the socket closes next, whether or not the alert went out")
    }
}
