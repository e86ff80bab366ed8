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
        // Refused before anything is measured: a run takes minutes.
        if let path = options.referencePath {
            do {
                try ReferenceBlock.check(path, placement: Placement(options.placement).mode.rawValue)
            } catch {
                FileHandleOut.error("rlk-bench: --write-reference \(path): \(error)")
                return 2
            }
        }
        let provenance = options.referencePath.map(ReferenceBlock.provenance(of:))
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
        // Each scenario's rows, one array per visit (see RunConfig.passes and
        // PassSchedule), pooled and printed once its last visit is done.
        let visits = selected.map { $0.visitsPerPass(config) }
        let schedule = PassSchedule(visits: visits)
        var produced = Array(repeating: [[ScenarioResult]](), count: selected.count)
        var pooledRows = Array(repeating: [ScenarioResult](), count: selected.count)
        for pass in 1...config.passes {
            var visited = Array(repeating: 0, count: selected.count)
            for (step, index) in schedule.order.enumerated() {
                let scenario = selected[index]
                visited[index] += 1
                var context: [String] = []
                if visits[index] > 1 { context.append("visit \(visited[index]) of \(visits[index])") }
                if config.passes > 1 { context.append("pass \(pass) of \(config.passes)") }
                let label = context.isEmpty ? "" : " (\(context.joined(separator: ", ")))"
                let scenarioStart = monotonicNanoseconds()
                FileHandleOut.error("[\(format(secondsSince(started))) s] running \(scenario.name)\(label)…")
                produced[index].append(scenario.run(config))
                FileHandleOut.error("[\(format(secondsSince(started))) s] \(scenario.name) took \(format(secondsSince(scenarioStart))) s")
                guard pass == config.passes, schedule.isLastVisit(at: step) else { continue }
                let pooled = Passes.pool(produced[index], visitsPerPass: visits[index])
                for row in pooled { say(TableReport.block(row)) }
                pooledRows[index] = pooled
            }
        }
        // In report order, whichever scenario's last visit came last.
        let rows = pooledRows.flatMap { $0 }
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
        if let path = options.referencePath, let provenance {
            do {
                try ReferenceBlock.write(rows, to: path, provenance: provenance, machine: machine, config: config,
                                         filters: options.filters, seconds: elapsed)
                FileHandleOut.error("wrote the \(config.placement.mode.rawValue) results into \(path)")
            } catch {
                FileHandleOut.error("rlk-bench: --write-reference: \(error)")
                status = 1
            }
        }
        if status != 0 { FileHandleOut.error("rlk-bench: some measurements could not be made (see ERROR above)") }
        return status
    }
}
