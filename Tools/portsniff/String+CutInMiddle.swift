extension String {
    /// The string cut in its middle to `width` characters, keeping its start
    /// and its end, where names differ ("worker-1", "worker-2";
    /// "disp…fault", "disp…ility"): how portsniff shortens a name.
    func cutInMiddle(to width: Int) -> String {
        guard count > width else { return self }
        guard width > 2 else { return String(prefix(max(0, width))) }
        let kept = width - 1, head = kept / 2
        return String(prefix(head)) + "…" + String(suffix(kept - head))
    }
}
