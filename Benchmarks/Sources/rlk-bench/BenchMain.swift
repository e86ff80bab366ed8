import Glibc

/// What `main.swift` runs: the hidden child roles, or a benchmark run.
enum BenchMain {
    static func run() -> Int32 {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--child" { return ChildRoles.run(Array(arguments.dropFirst())) }
        // For Benchmarks/scripts: one side of a scenario, run once (see Workload).
        if arguments.first == "--workload" { return Workload.run(Array(arguments.dropFirst())) }
        let options = Options.parse(arguments)
        if options.list {
            for scenario in allScenarios { print(TableReport.pad(scenario.name, 22) + scenario.summary) }
            return 0
        }
        let selected = allScenarios.filter { scenario in
            options.filters.isEmpty || options.filters.contains { scenario.name.contains($0) }
        }
        guard !selected.isEmpty else {
            FileHandleOut.error("rlk-bench: no scenario matches \(options.filters); see --list")
            return 2
        }
        if let directory = options.svgDirectory {
            var info = stat()
            guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                FileHandleOut.error("rlk-bench: --svg \(directory): not a directory")
                return 2
            }
        }
        do {
            try RunDirectory.prepare()
        } catch {
            FileHandleOut.error("rlk-bench: \(error)")
            return 1
        }
        _ = ProcessStats.raiseFileDescriptorLimit()

        let config = RunConfig(quick: options.quick, placement: Placement(options.placement), passes: options.passes)
        let machine = MachineInfo.current()
        // With --json, stdout carries only the JSON document; the table goes to stderr.
        let say: (String) -> Void = options.json ? { FileHandleOut.error($0) } : { FileHandleOut.out($0) }
        say(TableReport.header(machine, quick: options.quick, placement: config.placement, passes: config.passes))
        let started = monotonicNanoseconds()
        // Each scenario's rows, one array per pass (see RunConfig.passes),
        // pooled and printed once its last pass is done.
        var produced = Array(repeating: [[ScenarioResult]](), count: selected.count)
        var rows: [ScenarioResult] = []
        for pass in 1...config.passes {
            let passLabel = config.passes > 1 ? " (pass \(pass) of \(config.passes))" : ""
            for (index, scenario) in selected.enumerated() {
                let scenarioStart = monotonicNanoseconds()
                FileHandleOut.error("[\(format(secondsSince(started))) s] running \(scenario.name)\(passLabel)…")
                produced[index].append(scenario.run(config))
                FileHandleOut.error("[\(format(secondsSince(started))) s] \(scenario.name) took \(format(secondsSince(scenarioStart))) s")
                guard pass == config.passes else { continue }
                let pooled = Passes.pool(produced[index])
                for row in pooled { say(TableReport.block(row)) }
                rows += pooled
            }
        }
        let elapsed = secondsSince(started)
        say(TableReport.summary(rows, elapsed: elapsed))

        if options.markdown { say(MarkdownReport.table(rows)) }

        var status: Int32 = rows.contains { $0.failed } ? 1 : 0
        if options.json {
            do {
                FileHandleOut.out(try JSONReport.render(rows, machine: machine, quick: options.quick,
                                                        placement: config.placement, passes: config.passes,
                                                        seconds: elapsed))
            } catch {
                FileHandleOut.error("rlk-bench: JSON: \(error)")
                status = 1
            }
        }
        if let directory = options.svgDirectory {
            let caption = "rlk-bench\(options.quick ? " --quick" : "") (placement \(config.placement.mode.rawValue)), \(machine.cpus) × \(machine.cpuModel), \(machine.kernel), Swift \(machine.swift), libzmq \(machine.libzmq)"
            do {
                for path in try SVGCharts.write(rows, to: directory, caption: caption) { FileHandleOut.error("wrote \(path)") }
            } catch {
                FileHandleOut.error("rlk-bench: SVG: \(error)")
                status = 1
            }
        }
        if status != 0 { FileHandleOut.error("rlk-bench: some measurements could not be made (see ERROR above)") }
        return status
    }
}
