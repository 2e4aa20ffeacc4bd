import APNs
import Crypto
import FCM
import Vocabulary

/// One access-token exchange (FCM.md, "Authentication"): the service account's RS256 assertion,
/// signed now, `POST`ed as a form to `token_uri` over HTTP/2 and verified TLS, on a one-connection
/// pool of its own (`ConnectionPool.perform`, so a 503 or a refused stream is retried as every
/// request is). Blocks the calling thread: never a loop's.
struct FCMTokenExchange: Sendable {
    let account: ServiceAccount
    let key: RSASigningKey
    /// The token host (`account.tokenEndpoint`) with the TLS that verifies it.
    let endpoint: ProviderEndpoint
    /// The whole exchange, connect to answer.
    let timeout: Duration

    func run() -> Result<AccessToken, FCMAuthError> {
        let assertion: String
        do {
            let claims = try account.assertionClaims(issuedAt: WallClock.seconds())
            assertion = try CompactJWT.sign(header: account.assertionHeader, claims: claims, with: key)
        } catch {
            return .failure(.refused("cannot sign the service account's assertion (\(key.source)): \(error)"))
        }
        let request = ConnectionPool.Request(method: .post, path: account.tokenEndpoint.path,
                                             headers: [HeaderField("content-type", OAuthTokenRequest.contentType)],
                                             body: OAuthTokenRequest.body(assertion: assertion))
        let answer: ConnectionPool.Answer
        do {
            answer = try ConnectionPool.perform([request], configuration: PoolConfiguration(endpoint: endpoint), timeout: timeout)[0]
        } catch {
            return .failure(.unavailable("\(account.tokenURI): cannot start a connection: \(error)"))
        }
        if let failure = answer.failure { return .failure(.unavailable("\(account.tokenURI): \(failure)")) }
        return Self.judge(OAuthTokenResponse(status: answer.status, body: answer.body), uri: account.tokenURI)
    }

    /// A refusal in 4xx (but 429) is the account's fault and final; anything else may pass.
    static func judge(_ response: OAuthTokenResponse, uri: String) -> Result<AccessToken, FCMAuthError> {
        switch response {
        case let .granted(token):
            return .success(token)
        case let .refused(status, body):
            let text = "\(uri) refused the service account: \(status) \(body.error)" + (body.errorDescription.map { ": \($0)" } ?? "")
            return (400..<500).contains(status) && status != 429 ? .failure(.refused(text)) : .failure(.unavailable(text))
        case let .malformed(status, detail):
            return .failure(.unavailable("\(uri) answered \(status) without a usable token: \(detail)"))
        }
    }
}
