import APNs
import Crypto
import HTTP2
import Sender

/// The few requests of an event that are not one push per phone: creating, reading and deleting
/// its broadcast channels (the channel-management host) and one broadcast per channel (the push
/// host). A handful per event, so each batch goes on one connection of a one-connection pool
/// (`ConnectionPool.perform`), judged by the same classifier as the event's pushes. The daemon's
/// channel routes and its credential check use it too.
public struct ChannelClient: Sendable {
    let bundle: BundleID
    let push: ClientConnectionOptions
    let manage: ClientConnectionOptions
    let tokens: ProviderTokenSource?
    let timeout: Duration

    public init(bundle: BundleID, push: ClientConnectionOptions, manage: ClientConnectionOptions, tokens: ProviderTokenSource?,
                timeout: Duration) {
        self.bundle = bundle
        self.push = push
        self.manage = manage
        self.tokens = tokens
        self.timeout = timeout
    }

    /// One request's answer: its outcome, status (0: none came), APNs' reason, headers and body.
    typealias Answer = ConnectionPool.Answer

    /// Creates `count` channels on one connection (an event's groups need theirs before the first
    /// start goes out, so they are created together, not one connection each).
    public func create(count: Int, policy: MessageStoragePolicy) throws(FanoutError) -> [ChannelID] {
        guard count > 0 else { return [] }
        let requests = (0..<count).map { _ in ChannelManagementRequest(.create(policy), bundle: bundle, requestID: APNsID.random()) }
        var ids: [ChannelID] = []
        for answer in try perform(requests, on: manage) {
            guard answer.succeeded else { throw FanoutError(.refused, "APNs refused to create a broadcast channel: \(answer.summary)") }
            do { ids.append(try ChannelManagementResponse.createdChannelID(headers: answer.headers)) } catch {
                throw FanoutError(.unavailable, "the channel host's answer to a create has no usable apns-channel-id: \(error)")
            }
        }
        return ids
    }

    /// The storage policy of an existing channel (it decides a broadcast's `apns-expiration`).
    func storagePolicy(of id: ChannelID) throws(FanoutError) -> MessageStoragePolicy {
        let answer = try perform([ChannelManagementRequest(.read(id), bundle: bundle, requestID: APNsID.random())], on: manage)[0]
        guard answer.succeeded else { throw FanoutError(.refused, "channel \(id.text): APNs refused to read it: \(answer.summary)") }
        do { return try ChannelManagementResponse.channelInfo(body: answer.body).storagePolicy } catch {
            throw FanoutError(.unavailable, "channel \(id.text): the channel host's answer could not be read: \(error)")
        }
    }

    /// Every channel of the app (`GET …/all-channels`). Also the daemon's periodic credential
    /// check: it needs a valid provider token and the app's broadcast capability, and sends nothing
    /// to a phone.
    public func list() throws(FanoutError) -> [ChannelID] {
        let answer = try perform([ChannelManagementRequest(.listAll, bundle: bundle, requestID: APNsID.random())], on: manage)[0]
        guard answer.succeeded else { throw FanoutError(.refused, "APNs refused to list the channels: \(answer.summary)") }
        do { return try ChannelManagementResponse.channelList(body: answer.body) } catch {
            throw FanoutError(.unavailable, "the channel host's list of channels could not be read: \(error)")
        }
    }

    /// Deletes one channel; true when it was already gone (APNs answers 404 BadPath, APNS.md §9.2),
    /// which counts as deleted, so a repeated delete succeeds.
    public func delete(_ id: ChannelID) throws(FanoutError) -> Bool {
        let answer = try delete([id])[0]
        if answer.succeeded { return false }
        guard ChannelManagementResponse.deleteSucceeded(answer.response) else {
            throw FanoutError(.refused, "channel \(id.text): APNs refused to delete it: \(answer.summary)")
        }
        return true
    }

    /// Deletes channels; a channel already gone counts as deleted (APNS.md §9.2).
    func delete(_ ids: [ChannelID]) throws(FanoutError) -> [Answer] {
        guard !ids.isEmpty else { return [] }
        return try perform(ids.map { ChannelManagementRequest(.delete($0), bundle: bundle, requestID: APNsID.random()) }, on: manage)
    }

    func broadcast(_ requests: [BroadcastRequest]) throws(FanoutError) -> [Answer] {
        guard !requests.isEmpty else { return [] }
        return try perform(requests.map(ConnectionPool.Request.init), on: push)
    }

    private func perform(_ requests: [ChannelManagementRequest], on options: ClientConnectionOptions) throws(FanoutError) -> [Answer] {
        try perform(requests.map(ConnectionPool.Request.init), on: options)
    }

    /// No answer to any request (unreachable, TLS, the deadline) is the event's failure (exit 69);
    /// a request left without one otherwise is reported by the caller with its summary.
    private func perform(_ requests: [ConnectionPool.Request], on options: ClientConnectionOptions) throws(FanoutError) -> [Answer] {
        if let tokens {
            // Signed here first: a key that cannot sign is a configuration error (78), not an outage.
            var lease: ProviderTokenLease?
            do { _ = try tokens.token(for: &lease) } catch { throw FanoutError(.config, error.description) }
        }
        var configuration = PoolConfiguration(host: options.host, port: options.port, tls: options.tls)
        configuration.serverName = options.serverName
        configuration.connectTimeout = options.connectTimeout
        configuration.resolver = options.resolver
        configuration.providerTokens = tokens
        let answers = ConnectionPool.perform(requests, configuration: configuration, timeout: timeout)
        if answers.allSatisfy({ $0.status == 0 && ($0.outcome == .authOrConnectionFailure || $0.outcome == .expired) }) {
            throw FanoutError(.unavailable, "\(options.host):\(options.port): \(answers[0].summary)")
        }
        return answers
    }
}
