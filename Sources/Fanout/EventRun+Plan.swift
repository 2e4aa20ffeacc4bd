import TokenStore

extension EventRun {
    /// Phase 2: the start passes and the content they carry. An update of activities the app
    /// started itself (a train-follow app: no start ever sent for the key) starts nothing.
    func planStarts(_ admitted: Admitted) -> Starts {
        let plans = StartPlan.plans(for: event, progress: admitted.starts)
        let content = startContent(needed: !plans.isEmpty, serials: admitted.serials)
        return Starts(plans: content == nil ? [] : plans, content: content)
    }

    /// The attributes and alert starts carry: the event's own, or for an update that widens the
    /// area, those of the key's latest start serial (nil when the key never had a start).
    private func startContent(needed: Bool, serials: [EventSerialRecord]) -> EventPushes.StartContent? {
        guard needed else { return nil }
        if let type = event.attributesType, let attributes = event.attributes, let alert = event.alert {
            return EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        for record in serials.reversed() {
            guard let earlier = try? FanoutEvent(json: record.body), earlier.kind == .start,
                  let type = earlier.attributesType, let attributes = earlier.attributes, let alert = earlier.alert else { continue }
            return EventPushes.StartContent(attributesType: type, attributes: attributes, alert: alert)
        }
        // No start was ever sent for this key (activities the app started itself, as a train-follow
        // app does): an update widens nothing.
        return nil
    }
}
