import Glibc

/// rlk-bench's command line.
struct Options {
    var json = false
    var quick = false
    var svgDirectory: String?
    /// A document whose block for the run's placement the results replace.
    var referencePath: String?
    var filters: [String] = []
    var list = false
    var markdown = false
    var placement = Placement.Mode.cross
    /// nil: the default of the run's size (RunConfig.defaultPasses).
    var passes: Int?

    static let usage = """
        usage: rlk-bench [--quick] [--json] [--markdown] [--svg DIR] [--write-reference PATH] [--filter NAME]...
                         [--placement cross|same|free] [--passes N] [--list]

          --quick        smaller counts, twelve short passes: about 8-11 minutes (CI runs three)
          --json         print the results as JSON on stdout (progress goes to stderr)
          --markdown     also print the summary as a Markdown table (docs/performance.md)
          --svg DIR      write DIR/scaling.svg and DIR/latency.svg
          --write-reference PATH
                         write the results, with the date, the commit and the machine, into
                         PATH between "<!-- rlk-bench results: P -->" and "<!-- end -->",
                         P the placement (docs/performance.md); the rest of PATH is left as it is
          --filter NAME  run only scenarios whose name contains NAME (repeatable)
          --placement P  cross (default): the two threads of a measurement on CPUs 0 and 1;
                         same: both on CPU 0; free: no pinning (results then vary run to run)
          --passes N     run the scenarios N times in turn and pool each row's samples
                         (default: \(RunConfig.defaultPasses(quick: true)) with --quick, \(RunConfig.defaultPasses(quick: false)) otherwise; see docs/performance.md)
          --list         list the scenarios and exit

        Run it in release: swift run -c release rlk-bench
        The exit status is 0 whether targets are met or not; 1 if a measurement
        could not be made (an error in RunLoopKit or a required peer), 2 on bad usage.
        """

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--json": options.json = true
            case "--quick": options.quick = true
            case "--list": options.list = true
            case "--markdown": options.markdown = true
            case "--svg":
                guard let directory = rest.popFirst() else { fail("--svg needs a directory") }
                options.svgDirectory = directory
            case "--write-reference":
                guard let path = rest.popFirst() else { fail("--write-reference needs a path") }
                options.referencePath = path
            case "--placement":
                guard let value = rest.popFirst(), let mode = Placement.Mode(rawValue: value) else {
                    fail("--placement needs cross, same or free")
                }
                options.placement = mode
            case "--passes":
                guard let value = rest.popFirst(), let passes = Int(value), passes >= 1 else {
                    fail("--passes needs a count of 1 or more")
                }
                options.passes = passes
            case "--filter":
                guard let name = rest.popFirst() else { fail("--filter needs a scenario name") }
                options.filters.append(name)
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                fail("unknown argument '\(argument)'")
            }
        }
        return options
    }

    private static func fail(_ message: String) -> Never {
        FileHandleOut.error("rlk-bench: \(message)\n\n\(usage)")
        exit(2)
    }
}
