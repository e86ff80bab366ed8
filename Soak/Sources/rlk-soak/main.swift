// rlk-soak: RunLoopKit under a long randomised load. `rlk-soak --seconds N`
// is the coordinator; it runs this same executable as `rlk-soak child ...`
// for each child process. Soak/README.md says what is checked.
import Glibc

let arguments = CommandLine.arguments.dropFirst()
do {
    if arguments.first == "child" {
        ChildProcess.run(try ChildOptions(parsing: arguments.dropFirst()))
    }
    if arguments.isEmpty || arguments.first == "--help" {
        Console.say(SoakOptions.usage)
        exit(arguments.isEmpty ? 2 : 0)
    }
    let options = try SoakOptions(parsing: arguments)
    exit(Coordinator(options: options).run())
} catch {
    Console.warn("rlk-soak: \(error)\n\(SoakOptions.usage)")
    exit(2)
}
