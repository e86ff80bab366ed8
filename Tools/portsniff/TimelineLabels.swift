/// Where the timeline's texts go, so that no two overlap: each text is
/// placed as a box estimated from its length (wider than DejaVu Sans draws
/// it, so that an estimate never undercounts), fixed texts first (titles,
/// legend, axis, track names, pass labels), then optional ones (latencies)
/// at the first of a few nearby spots that is free, or left out and
/// counted, so that the picture can say how many.
struct TimelineLabels {
    struct Box {
        let left, top, right, bottom: Double

        func overlaps(_ other: Box) -> Bool {
            left < other.right && other.left < right && top < other.bottom && other.top < bottom
        }
    }

    private(set) var placed: [Box] = []
    /// Optional texts that found no free spot.
    private(set) var leftOut = 0

    /// The width `text` takes at `size` pixels (bold or not), overestimated:
    /// DejaVu Sans's widest common glyphs (digits, most lowercase) take
    /// 0.64 of the size, bold 0.71.
    static func width(_ text: String, size: Double, bold: Bool = false) -> Double {
        Double(text.count) * size * (bold ? 0.72 : 0.65)
    }

    /// The box of `text` drawn with its baseline at `y` from `x`.
    static func box(_ text: String, x: Double, y: Double, size: Double, bold: Bool = false) -> Box {
        Box(left: x, top: y - size, right: x + width(text, size: size, bold: bold), bottom: y + size * 0.3)
    }

    /// A text that is drawn whatever else is there.
    mutating func fix(_ box: Box) { placed.append(box) }

    /// The first spot of `spots` (baselines) where `text` overlaps nothing
    /// placed, now taken; nil (and counted) if there is none.
    mutating func place(_ text: String, x: Double, spots: [Double], size: Double) -> Double? {
        for y in spots {
            let box = Self.box(text, x: x, y: y, size: size)
            if !placed.contains(where: { $0.overlaps(box) }) {
                placed.append(box)
                return y
            }
        }
        leftOut += 1
        return nil
    }
}
