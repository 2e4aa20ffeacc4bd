import Sender

extension StartScanner {
    /// Hands a chunk's jobs to their pools: FCM messages to the Android pool, the rest to APNs'.
    /// Both report to the same sink and count against the APNs pool's gate, so the bound on
    /// what a crash leaves unknown covers both providers together.
    func send(_ jobs: [PushJob]) {
        guard let android else {
            pool.send(jobs, urgent: urgent)
            return
        }
        var apns: [PushJob] = [], fcm: [PushJob] = []
        for job in jobs {
            if androidSlots.contains(Int(job.id >> PushSlot.sequenceBits)) { fcm.append(job) } else { apns.append(job) }
        }
        if !apns.isEmpty { pool.send(apns, urgent: urgent) }
        if !fcm.isEmpty { android.send(fcm, urgent: urgent) }
    }
}
