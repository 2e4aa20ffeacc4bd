import IO
import DaemonConfiguration
import Runtime
import Crypto
import Fanout
import TokenStore
import Vocabulary

/// `GET /`: one server-rendered HTML page an operator can open on the box (or through an SSH
/// tunnel) during an event, with no other tool: apps and their connections, the clock, the queue,
/// the last events with their delivery curves, and the token counts. Inline CSS and SVG only: no
/// scripts and no external assets, so it works offline and with a strict browser policy.
///
/// Every text that comes from configuration, the store or a request (app names, event keys,
/// halt messages, errors) goes through `escape`. Tokens, keys and the admin token are never read
/// here: the page is unauthenticated like `/metrics`.
package enum StatusPage {
    /// `tokens`: the store's statistics at most a minute old (`TokenStatisticsCache`), nil when unreadable.
    /// `refresh`: seconds after which the browser reloads the page (`GET /?refresh=10`; nil: never).
    package static func render(_ status: any StatusView, tokens: StoreStatistics?, refresh: Int? = nil) -> String {
        let reload = refresh.map { "<meta http-equiv=\"refresh\" content=\"\($0)\">\n" } ?? ""
        var html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            \(reload)<title>Sokuho status</title>
            <style>
            body{font-family:sans-serif;margin:1.5em;color:#222}
            table{border-collapse:collapse;margin-bottom:1.5em}
            th,td{border-bottom:1px solid #ddd;padding:.3em .7em;text-align:left;vertical-align:middle}
            td.n{text-align:right;font-variant-numeric:tabular-nums}
            .warn{background:#fff3cd;border:1px solid #e0b000;padding:.5em .8em;margin-bottom:1em}
            .ok{color:#2a7a3a}.bad{color:#b00020}
            </style></head><body>
            <h1>Sokuho status</h1>

            """
        // Which build, and when this snapshot was taken (a page left open, or printed, says its age).
        html += "<p id=\"rendered\">sokuho \(escape(SokuhoVersion.current)) · rendered \(ProviderTokenClockDiagnosis.iso8601(Int64(WallClock.milliseconds() / 1000)))"
            + (refresh.map { " · reloads every \($0) s" } ?? " · <a href=\"/?refresh=10\">reload every 10 s</a>") + "</p>\n"
        if status.isStandby {
            html += "<p class=\"warn\" id=\"standby\" style=\"font-size:1.4em\"><strong>STANDBY</strong>: this daemon sends nothing until promoted (sokuho serve --promote --config FILE, or SIGUSR1).</p>\n"
        }
        appendClock(&html)
        appendApps(&html, status.runningApps)
        let (queued, running) = status.eventCounts
        html += "<h2>Events</h2>\n<p id=\"queue\">\(queued) queued, \(running) running</p>\n"
        appendEvents(&html, status.recentEvents(limit: 20), android: status.runningApps.contains { $0.android != nil })
        appendTokens(&html, tokens)
        html += "</body></html>\n"
        return html
    }

    private static func appendClock(_ html: inout String) {
        let clock = ClockStatus.current()
        if clock.synchronised {
            html += "<p id=\"clock\" class=\"ok\">Clock synchronised"
            if let error = clock.maximumErrorMicroseconds { html += " (maximum error \(error) µs)" }
            html += "</p>\n"
        } else {
            // Provider tokens carry the wall-clock time; APNs refuses ones from a clock far off.
            html += "<p id=\"clock\" class=\"warn\"><strong>Warning:</strong> the system clock is not synchronised. "
                + "Provider tokens and expirations depend on it; start an NTP client (systemd-timesyncd, chrony).</p>\n"
        }
    }

    private static func appendApps(_ html: inout String, _ runtimes: [AppRuntime]) {
        html += "<h2>Apps</h2>\n<table id=\"apps\"><tr><th>App</th><th>Connections up</th><th>Configured</th><th>Pushes in flight</th><th>State</th><th>Credentials</th></tr>\n"
        for runtime in runtimes {
            let up = runtime.pool.connectionsUp
            let state: String
            if let halted = runtime.pool.haltMessage {
                state = "<span class=\"bad\">halted: \(escape(halted))</span>"
            } else if up == 0 {
                state = "<span class=\"bad\">no connection up</span>"
            } else {
                state = "<span class=\"ok\">ready</span>"
            }
            let inFlight = max(0, runtime.pool.submittedCount - runtime.pool.finishedCount)
            html += "<tr><td>\(escape(runtime.name))</td><td class=\"n\">\(up)</td><td class=\"n\">\(runtime.app.connections)</td>"
                + "<td class=\"n\">\(inFlight)</td><td>\(state)</td><td>\(credentials(runtime))</td></tr>\n"
            // Its Android side: the FCM pool, one row of its own (the credential check covers both).
            if let android = runtime.android {
                let up = android.pool.connectionsUp
                let state = android.pool.haltMessage.map { "<span class=\"bad\">halted: \(escape($0))</span>" }
                    ?? (up == 0 ? "<span class=\"bad\">no connection up</span>" : "<span class=\"ok\">ready</span>")
                let inFlight = max(0, android.pool.submittedCount - android.pool.finishedCount)
                html += "<tr class=\"android\"><td>\(escape(runtime.name)) · Android \(escape(android.name))</td><td class=\"n\">\(up)</td>"
                    + "<td class=\"n\">\(android.android.connections)</td><td class=\"n\">\(inFlight)</td><td>\(state)</td><td>FCM</td></tr>\n"
            }
        }
        html += "</table>\n"
    }

    /// The last credential check: when, and why it failed.
    private static func credentials(_ runtime: AppRuntime) -> String {
        guard let check = runtime.credentialCheck.withLock({ $0 }) else { return "<span>not checked yet</span>" }
        let when = "checked " + escape(ProviderTokenClockDiagnosis.iso8601(check.checkedAt))
        if check.ok { return "<span class=\"ok\">ok</span> (\(when))" }
        return "<span class=\"bad\">failed: \(escape(check.message ?? ""))</span> (\(when))"
    }

    /// `android`: whether a configured app has an Android side; without one the column would only
    /// ever say 0 / 0.
    private static func appendEvents(_ html: inout String, _ entries: [EventQueue.Entry], android showsAndroid: Bool) {
        guard !entries.isEmpty else { html += "<p>No events since the daemon started.</p>\n"; return }
        html += "<table id=\"events\"><tr><th>Key</th><th>Serial</th><th>Kind</th><th>App</th><th>Accepted</th><th>State</th>"
            + "<th>Delivered / targets</th><th>Unknown</th><th>Failed</th>" + (showsAndroid ? "<th>Android delivered / targets</th>" : "")
            + "<th>Seconds</th><th>Delivered over time</th></tr>\n"
        for entry in entries {
            let report = entry.report
            var state = escape(entry.state.rawValue)
            if let error = entry.error { state += ": " + escape(error) }
            if let stopped = report?.stopped { state += ": " + escape(stopped) }
            let delivered = report.map { "\($0.delivered) / \($0.targets)" } ?? "–"
            let seconds = report.map { fixed($0.seconds, digits: 2) } ?? "–"
            // Unknown and failed are phones without a confirmed start: the numbers an operator acts on.
            let unknown = report.map { String($0.unknown) } ?? "–", failed = report.map { String($0.failedTotal) } ?? "–"
            // Android's share (also in the totals), the phones it left out, and why Android stopped.
            var android = report.map { "\($0.android.delivered) / \($0.android.targets)" } ?? "–"
            if let report, report.androidSkipped > 0 { android += " (\(report.androidSkipped) not sent)" }
            if let stopped = report?.androidStopped { android += ": " + escape(stopped) }
            html += "<tr class=\"event\"><td class=\"key\">\(escape(entry.event.key))</td><td class=\"n\">\(entry.event.serial)</td>"
                + "<td>\(escape(entry.event.kind.rawValue))</td><td>\(escape(entry.app.name))</td>"
                + "<td class=\"accepted\">\(escape(ProviderTokenClockDiagnosis.iso8601(entry.acceptedAt)))</td><td>\(state)</td>"
                + "<td class=\"n delivered\">\(delivered)</td><td class=\"n unknown\">\(unknown)</td><td class=\"n failed\">\(failed)</td>"
                + (showsAndroid ? "<td class=\"n android\">\(android)</td>" : "") + "<td class=\"n\">\(seconds)</td>"
                + "<td>\(sparkline(entry.curve, targets: report?.targets ?? 0, label: entry.event.key))</td></tr>\n"
        }
        html += "</table>\n"
    }

    private static func appendTokens(_ html: inout String, _ statistics: StoreStatistics?) {
        html += "<h2>Tokens</h2>\n"
        guard let statistics else { html += "<p class=\"bad\">The token store could not be read.</p>\n"; return }
        html += "<p>\(statistics.installations) installations (counts refreshed at most once a minute)</p>\n"
        html += "<table id=\"tokens\"><tr><th>App</th><th>Environment</th><th>Kind</th><th>Tokens</th></tr>\n"
        for count in statistics.tokens {
            html += "<tr><td>\(escape(count.app))</td><td>\(escape(count.environment.rawValue))</td>"
                + "<td>\(escape(count.kind.name))</td><td class=\"n\">\(count.count)</td></tr>\n"
        }
        html += "</table>\n"
    }

    /// A small inline SVG of the cumulative delivered count over the event's run: the shape says
    /// at a glance whether delivery was steady, stalled (a flat stretch) or had a long tail. The y
    /// axis goes to the targets (or the highest count) so a curve that never reaches the top shows
    /// an event that did not deliver everything.
    package static func sparkline(_ curve: [(seconds: Double, count: Int)], targets: Int, label: String) -> String {
        let width = 160.0, height = 32.0
        let title = "<title>\(escape(label)): delivered over time</title>"
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\">\(title)"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#f6f8fa\"/>"
        let top = max(targets, curve.map(\.count).max() ?? 0)
        let end = curve.last?.seconds ?? 0
        if top > 0, end > 0 {
            // Starts at (0, 0): the curve is cumulative from the event's start.
            var points = ["0.0," + fixed(height, digits: 1)]
            for point in curve {
                let x = point.seconds / end * (width - 2) + 1
                let y = height - 1 - Double(point.count) / Double(top) * (height - 2)
                points.append(fixed(x, digits: 1) + "," + fixed(y, digits: 1))
            }
            svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>"
        }
        return svg + "</svg>"
    }

    /// Text safe in HTML element content and in double- or single-quoted attributes.
    package static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// `value` with `digits` decimals, without Foundation's formatters.
    package static func fixed(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((abs(value) * scale).rounded())
        let whole = scaled / Int(scale), fraction = scaled % Int(scale)
        var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let fractionText = String(fraction)
            text += "." + String(repeating: "0", count: digits - fractionText.count) + fractionText
        }
        return text
    }
}
