// Examples/cluster (S-NET-1, S-NET-2, S-NET-4): a directory, two workers
// and a client on four hosts (network namespaces as root, else loopback),
// set up as a deployment would be, the client's requests fanned out to
// the workers it found through the directory's name.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Examples/cluster (S-NET-1, S-NET-2, S-NET-4)", .serialized, .blocksThreads)
struct ClusterExampleTests {
    @Test("S-NET-4: the cluster example makes every host's key on its first run and keeps it after, lists every key in one authorized-keys file copied to every host, and the client gets every answer, from both workers")
    func clusterRunsTwice() throws {
        try #require(SpawnedProgram.isBuilt("cluster"), "needs the examples built (swift build)")
        let directory = makeTemporaryDirectory("rlk-cluster-test")
        defer { PortProcess.removeTree(directory) }
        let hosts = ["names", "worker-1", "worker-2", "client"]

        let first = try SpawnedProgram("cluster", ["--dir", directory + "/cluster", "--requests", "300"], in: directory)
        #expect(first.waitForExit(timeout: 120) == 0, "\(first.output) \(first.errorOutput)")
        let output = first.output
        if NamespaceHosts.available {
            #expect(output.contains("hosts: network namespaces"), "\(output)")
        } else {
            #expect(!NamespaceHosts.required, "RUNLOOPKIT_REQUIRE_NETNS=1, but the cluster ran on loopback")
            #expect(output.contains("hosts: processes on this host's loopback"), "\(output)")
        }
        for host in hosts { #expect(output.contains("key of \(host): "), "\(host)") }
        #expect(!output.contains("kept from an earlier run"))
        #expect(output.contains("[client] 300 of 300 answers, sum of squares 9045050"), "\(output)")
        #expect(output.contains("[client] worker-1 answered "))
        #expect(output.contains("[client] worker-2 answered "))

        let authorized = try String(contentsOfFile: directory + "/cluster/authorized_keys", encoding: .utf8)
        let lines = authorized.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(lines.map { $0.split(separator: " ").last.map(String.init) } == hosts)
        for host in hosts {
            let copy = try String(contentsOfFile: directory + "/cluster/\(host)/config/runloopkit/authorized_keys", encoding: .utf8)
            #expect(copy == authorized, "\(host)'s copy")
        }

        let second = try SpawnedProgram("cluster", ["--dir", directory + "/cluster", "--requests", "10"], in: directory)
        #expect(second.waitForExit(timeout: 120) == 0, "\(second.output) \(second.errorOutput)")
        for host in hosts { #expect(second.output.contains("key of \(host): "), "\(host)") }
        #expect(second.output.components(separatedBy: "kept from an earlier run").count == hosts.count + 1, "\(second.output)")
        #expect(try String(contentsOfFile: directory + "/cluster/authorized_keys", encoding: .utf8) == authorized, "the same keys")
        #expect(second.output.contains("[client] 10 of 10 answers, sum of squares 385"), "\(second.output)")
    }
}
