/// portsniff's entry: `portsniff timeline FILE ...` draws a recording
/// (`TimelineCommand`); anything else sniffs (`PortSniff`). A word before
/// the options rather than ArgumentParser's subcommands, so that the
/// sniffer's own arguments (`portsniff -- COMMAND`) stay as they are.
@main
enum PortSniffMain {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "timeline" {
            TimelineCommand.main(Array(arguments.dropFirst()))
        } else {
            PortSniff.main(arguments)
        }
    }
}
