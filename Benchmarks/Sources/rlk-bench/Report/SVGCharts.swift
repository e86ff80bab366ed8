import Glibc

/// `--svg DIR`: the charts for docs/performance.md, written as plain SVG
/// text (no plotting tool needed, diff-able in review):
///
/// - `scaling.svg`: per-message cost against the number of ports on one
///   loop (log x), median with a p99 whisker, and the line of 2 × the 1-port cost at 10,000 ports (not due);
/// - `latency.svg`: one panel per round-trip scenario and for timer
///   lateness, the distribution of every side as a cumulative curve
///   (x: latency, log scale; y: share of samples at or below it: linear up
///   to 90 %, then a "nines" scale up to 99.9 %, so that the tail gets as
///   much room as the body).
enum SVGCharts {
    static let palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]

    /// Writes the charts that have data; returns the paths written.
    static func write(_ rows: [ScenarioResult], to directory: String, caption: String) throws -> [String] {
        var written: [String] = []
        if let svg = scaling(rows, caption: caption) {
            let path = directory + "/scaling.svg"
            try save(svg, to: path)
            written.append(path)
        }
        if let svg = latency(rows, caption: caption) {
            let path = directory + "/latency.svg"
            try save(svg, to: path)
            written.append(path)
        }
        return written
    }

    // MARK: - Scaling curve

    static func scaling(_ rows: [ScenarioResult], caption: String) -> String? {
        let scalingRows = rows.filter { $0.name.hasPrefix("port-scaling-") && $0.parameter != nil }
        var points: [(x: Double, median: Double, p99: Double)] = []
        let baselineSamples = scalingRows.flatMap { $0.peer?.samples ?? [] }
        guard let baseline = Summary(baselineSamples, better: .lower) else { return nil }
        points.append((1, baseline.median, baseline.p99))
        for row in scalingRows {
            if let summary = row.ours.summary, let x = row.parameter { points.append((x, summary.median, summary.p99)) }
        }
        let width = 760.0, height = 460.0
        let plot = (left: 80.0, right: width - 70, top: 70.0, bottom: height - 70)
        let maxX = pow(10, (log10(points.map(\.x).max() ?? 10)).rounded(.up))
        // The target as the largest port count's row judges it: against the
        // 1-port set measured beside it.
        let largest = scalingRows.max { ($0.parameter ?? 0) < ($1.parameter ?? 0) }
        let target = 2 * (largest?.peer?.summary?.median ?? baseline.median)
        let yMax = niceCeiling(max(points.map(\.p99).max() ?? 1, target) * 1.1)
        func px(_ x: Double) -> Double { plot.left + (plot.right - plot.left) * log10(x) / log10(max(maxX, 10)) }
        func py(_ y: Double) -> Double { plot.bottom - (plot.bottom - plot.top) * y / yMax }

        var svg = open(width, height)
        svg += text(width / 2, 28, "Per-message cost vs ports on one loop (RunLoopKit)", size: 17, anchor: "middle", weight: "bold")
        svg += text(width / 2, 48, caption, size: 11, anchor: "middle", color: "#555")
        // Axes and grid.
        var decade = 1.0
        while decade <= maxX {
            svg += line(px(decade), plot.top, px(decade), plot.bottom, color: "#ddd")
            svg += text(px(decade), plot.bottom + 18, grouped(decade), size: 12, anchor: "middle")
            decade *= 10
        }
        for tick in linearTicks(yMax) {
            svg += line(plot.left, py(tick), plot.right, py(tick), color: "#eee")
            svg += text(plot.left - 8, py(tick) + 4, format(tick), size: 12, anchor: "end")
        }
        svg += line(plot.left, plot.bottom, plot.right, plot.bottom, color: "#333")
        svg += line(plot.left, plot.top, plot.left, plot.bottom, color: "#333")
        svg += text((plot.left + plot.right) / 2, height - 25, "ports scheduled on the loop (log scale)", size: 13, anchor: "middle")
        svg += "<text x=\"22\" y=\"\((plot.top + plot.bottom) / 2)\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 22 \((plot.top + plot.bottom) / 2))\" font-family=\"sans-serif\">ns per message</text>\n"
        // Target line.
        svg += "<line x1=\"\(plot.left)\" y1=\"\(py(target))\" x2=\"\(plot.right)\" y2=\"\(py(target))\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n"
        svg += text(plot.left + 8, py(target) - 6, "2 × the 1-port cost at 10,000 ports, not due (\(format(target)) ns)", size: 12, anchor: "start", color: "#d62728")
        // Curve, whiskers, labels.
        let sorted = points.sorted { $0.x < $1.x }
        svg += polyline(sorted.map { (px($0.x), py($0.median)) }, color: palette[0], width: 2.5)
        for point in sorted {
            svg += line(px(point.x), py(point.median), px(point.x), py(point.p99), color: palette[0], width: 1.2)
            svg += line(px(point.x) - 5, py(point.p99), px(point.x) + 5, py(point.p99), color: palette[0], width: 1.2)
            svg += "<circle cx=\"\(px(point.x))\" cy=\"\(py(point.median))\" r=\"4.5\" fill=\"\(palette[0])\"/>\n"
            svg += text(px(point.x) + 8, py(point.median) + 16, format(point.median), size: 12, anchor: "start")
        }
        svg += text(plot.left + 10, plot.top + 14, "● median of the batches   ⊥ p99 (worst batches)", size: 12, anchor: "start", color: palette[0])
        return svg + "</svg>\n"
    }

    // MARK: - Latency distributions

    static func latency(_ rows: [ScenarioResult], caption: String) -> String? {
        var groups: [(name: String, sides: [Measurement])] = []
        for row in rows {
            guard let group = row.chartGroup else { continue }
            let sides = [row.ours] + (row.peer.map { [$0] } ?? [])
            let index = groups.firstIndex { $0.name == group } ?? {
                groups.append((group, []))
                return groups.count - 1
            }()
            for side in sides where side.samples.count >= 20 && !groups[index].sides.contains(where: { $0.label == side.label }) {
                groups[index].sides.append(side)
            }
        }
        groups.removeAll { $0.sides.isEmpty }
        guard !groups.isEmpty else { return nil }
        let columns = 2
        let panelWidth = 520.0, panelHeight = 330.0
        let rowsCount = (groups.count + columns - 1) / columns
        let width = panelWidth * Double(columns), height = 70 + panelHeight * Double(rowsCount)
        var svg = open(width, height)
        svg += text(width / 2, 28, "Latency distributions: share of samples at or below each latency", size: 17, anchor: "middle", weight: "bold")
        svg += text(width / 2, 48, caption, size: 11, anchor: "middle", color: "#555")
        for (index, group) in groups.enumerated() {
            let originX = panelWidth * Double(index % columns), originY = 60 + panelHeight * Double(index / columns)
            svg += panel(group.name, group.sides, x: originX, y: originY, width: panelWidth, height: panelHeight)
        }
        return svg + "</svg>\n"
    }

    private static func panel(_ title: String, _ sides: [Measurement], x: Double, y: Double, width: Double, height: Double) -> String {
        let plot = (left: x + 60, right: x + width - 20, top: y + 40, bottom: y + height - 110)
        // Points evenly spaced in the chart's y scale, so the tail is drawn as finely as the body.
        let levels = (0...240).map { share(Double($0) / 240) }
        let curves = sides.map { side in
            let sorted = side.samples.sorted()
            return levels.map { (p: $0, value: Summary.percentile(sorted, $0)) }
        }
        let values = curves.flatMap { $0.map(\.value) }.filter { $0 > 0 }
        guard let low = values.min(), let high = values.max() else { return "" }
        let lo = pow(10, log10(low).rounded(.down)), hi = pow(10, log10(high).rounded(.up))
        func px(_ v: Double) -> Double { plot.left + (plot.right - plot.left) * (log10(max(v, lo)) - log10(lo)) / (log10(hi) - log10(lo)) }
        func py(_ p: Double) -> Double { plot.bottom - (plot.bottom - plot.top) * scaleHeight(p) }
        var svg = text(x + width / 2, y + 24, title, size: 14, anchor: "middle", weight: "bold")
        for tick in logTicks(lo, hi) {
            svg += line(px(tick), plot.top, px(tick), plot.bottom, color: "#e5e5e5")
            svg += text(px(tick), plot.bottom + 16, short(tick), size: 11, anchor: "middle")
        }
        for (p, label) in [(0.0, "0%"), (0.25, "25%"), (0.5, "50%"), (0.9, "90%"), (0.99, "99%"), (0.999, "99.9%")] {
            svg += line(plot.left, py(p), plot.right, py(p), color: p == 0.5 || p == 0.99 ? "#ccc" : "#eee")
            svg += text(plot.left - 6, py(p) + 4, label, size: 11, anchor: "end")
        }
        svg += line(plot.left, plot.bottom, plot.right, plot.bottom, color: "#333")
        svg += line(plot.left, plot.top, plot.left, plot.bottom, color: "#333")
        svg += text((plot.left + plot.right) / 2, plot.bottom + 34, "µs (log scale)", size: 12, anchor: "middle")
        for (index, curve) in curves.enumerated() {
            let color = palette[index % palette.count]
            svg += polyline(curve.map { (px($0.value), py($0.p)) }, color: color, width: index == 0 ? 2.5 : 1.8)
            let summary = sides[index].summary
            let legend = "\(sides[index].label): median \(format(summary?.median ?? .nan)), p99 \(format(summary?.p99 ?? .nan)) µs"
            let legendY = plot.bottom + 54 + Double(index) * 16
            svg += line(x + 24, legendY - 4, x + 44, legendY - 4, color: color, width: 3)
            svg += text(x + 50, legendY, legend, size: 11, anchor: "start")
        }
        return svg
    }

    /// The y scale of the latency panels, 0...1: shares up to 90 % take the
    /// lower half linearly; 90 %, 99 %, 99.9 % ("nines") split the upper half.
    private static func scaleHeight(_ p: Double) -> Double {
        if p <= 0.9 { return 0.5 * p / 0.9 }
        let nines = -log10(max(1 - p, 0.001))  // 1 at 90 %, 3 at 99.9 %
        return 0.5 + 0.25 * (nines - 1)
    }

    /// The inverse of `scaleHeight`.
    private static func share(_ height: Double) -> Double {
        if height <= 0.5 { return max(0.001, 0.9 * height / 0.5) }
        return 1 - pow(10, -(1 + (height - 0.5) / 0.25))
    }

    // MARK: - SVG pieces

    private static func open(_ width: Double, _ height: Double) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))">
        <rect width="100%" height="100%" fill="white"/>

        """
    }

    private static func text(_ x: Double, _ y: Double, _ content: String, size: Int, anchor: String,
                             color: String = "#222", weight: String = "normal") -> String {
        "<text x=\"\(r(x))\" y=\"\(r(y))\" font-family=\"sans-serif\" font-size=\"\(size)\" text-anchor=\"\(anchor)\" fill=\"\(color)\" font-weight=\"\(weight)\">\(escape(content))</text>\n"
    }

    private static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, color: String, width: Double = 1) -> String {
        "<line x1=\"\(r(x1))\" y1=\"\(r(y1))\" x2=\"\(r(x2))\" y2=\"\(r(y2))\" stroke=\"\(color)\" stroke-width=\"\(width)\"/>\n"
    }

    private static func polyline(_ points: [(Double, Double)], color: String, width: Double) -> String {
        let list = points.map { "\(r($0.0)),\(r($0.1))" }.joined(separator: " ")
        return "<polyline points=\"\(list)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"\(width)\" stroke-linejoin=\"round\"/>\n"
    }

    /// Coordinates to 0.1 px: enough, and keeps the files small.
    private static func r(_ value: Double) -> String { format1(value) }

    private static func format1(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }

    private static func escape(_ text: String) -> String {
        text.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;").replacingAll("\"", "&quot;")
    }

    /// 1, 2, 5 × 10^k inside [low, high]: only 10^k over more than three
    /// decades, all of 1...9 × 10^k if that gives too few.
    private static func logTicks(_ low: Double, _ high: Double) -> [Double] {
        func ticks(_ mantissas: [Double]) -> [Double] {
            var result: [Double] = []
            var decade = pow(10, log10(low).rounded(.down))
            while decade <= high {
                for m in mantissas where m * decade >= low * 0.999 && m * decade <= high * 1.001 { result.append(m * decade) }
                decade *= 10
            }
            return result
        }
        if log10(high / low) > 3.01 { return ticks([1]) }
        let coarse = ticks([1, 2, 5])
        return coarse.count >= 3 ? coarse : ticks([1, 2, 3, 4, 5, 6, 7, 8, 9])
    }

    /// About five round ticks from 0 to `top`.
    private static func linearTicks(_ top: Double) -> [Double] {
        let step = niceCeiling(top / 5)
        return stride(from: 0, through: top * 1.0001, by: step).map { $0 }
    }

    /// The smallest 1, 2, 2.5 or 5 × 10^k at or above `value`.
    private static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        let decade = pow(10, log10(value).rounded(.down))
        for m in [1, 2, 2.5, 5, 10] where m * decade >= value { return m * decade }
        return 10 * decade
    }

    private static func grouped(_ value: Double) -> String { format(value) }

    /// 1500 -> "1.5k", 20000 -> "20k": axis labels that do not collide.
    private static func short(_ value: Double) -> String {
        value >= 1000 ? format(value / 1000) + "k" : format(value)
    }

    private static func save(_ text: String, to path: String) throws {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var text = text
        let ok = text.withUTF8 { bytes in Glibc.write(fd, bytes.baseAddress, bytes.count) == bytes.count }
        if !ok { throw BenchError("short write to \(path)") }
    }
}

extension String {
    /// Every occurrence of `target` replaced (FoundationEssentials-free).
    func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
