import APNs
import Crypto
import HTTP2

/// The few requests of an event that are not one push per phone: creating, reading and deleting
/// its broadcast channels (the channel-management host) and one broadcast per channel (the push
/// host). A handful per event, so each batch is one connection of `OneShotClient`.
struct ChannelClient {
    let bundle: BundleID
    let push: ClientConnectionOptions
    let manage: ClientConnectionOptions
    let tokens: ProviderTokenSource?
    let timeout: Duration

    /// One request's answer: the HTTP status (0: none came) and APNs' reason.
    struct Answer {
        var status: Int
        var reason: Reason?
        var headers: [HeaderField]
        var body: [UInt8]
        var failure: String?

        var succeeded: Bool { (200..<300).contains(status) }
        var summary: String { failure ?? "\(status) \(reason?.name ?? "")" }
    }

    /// Creates `count` channels on one connection (an event's groups need theirs before the first
    /// start goes out, so they are created together, not one connection each).
    func create(count: Int, policy: MessageStoragePolicy) throws(FanoutError) -> [ChannelID] {
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

    /// Deletes channels; a channel already gone counts as deleted (APNS.md §9.2).
    func delete(_ ids: [ChannelID]) throws(FanoutError) -> [Answer] {
        guard !ids.isEmpty else { return [] }
        return try perform(ids.map { ChannelManagementRequest(.delete($0), bundle: bundle, requestID: APNsID.random()) }, on: manage)
    }

    func broadcast(_ requests: [BroadcastRequest]) throws(FanoutError) -> [Answer] {
        guard !requests.isEmpty else { return [] }
        let client = requests.map { ClientRequest(method: "POST", path: $0.path, headers: $0.headers.map { ($0.name, $0.value) }, body: $0.payload) }
        return try perform(client, on: push)
    }

    private func perform(_ requests: [ChannelManagementRequest], on options: ClientConnectionOptions) throws(FanoutError) -> [Answer] {
        let client = requests.map { request -> ClientRequest in
            let method: StaticString
            switch request.method {
            case .get: method = "GET"
            case .delete: method = "DELETE"
            default: method = "POST"
            }
            return ClientRequest(method: method, path: request.path, headers: request.headers.map { ($0.name, $0.value) },
                                 body: request.body.isEmpty ? nil : request.body)
        }
        return try perform(client, on: options)
    }

    private func perform(_ requests: [ClientRequest], on options: ClientConnectionOptions) throws(FanoutError) -> [Answer] {
        var authorization: String?
        if let tokens {
            var lease: ProviderTokenLease?
            do { authorization = try tokens.token(for: &lease).authorization } catch { throw FanoutError(.config, error.description) }
        }
        switch OneShotClient.perform(requests, options: options, authorization: authorization, timeout: timeout, streamsUntilFirstSuccess: 1) {
        case let .failure(error):
            throw FanoutError(.unavailable, "\(options.host):\(options.port): \(error)")
        case let .success(results):
            return results.map { result in
                switch result {
                case let .response(status, headers, body):
                    let fields = headers.map { HeaderField($0.name, $0.value) }
                    return Answer(status: status, reason: Response(status: status, headers: fields, body: body).reason, headers: fields, body: body)
                case let .failed(failure):
                    return Answer(status: 0, reason: nil, headers: [], body: [], failure: "no answer: \(failure)")
                }
            }
        }
    }
}
