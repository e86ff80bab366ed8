/// What the coordinator tells a child on its command line.
struct ChildOptions: Sendable {
    var incarnation: UInt32
    var coordinatorPID: Int32
    var coordinatorName: String
    var threads: Int
    var portsPerWorker: Int
    var streamsPerWorker: Int
    var maxBurst: Int
    var seed: UInt64
    /// A child still alive this long after its start is an orphan of a
    /// coordinator that failed to end it: it exits.
    var lifetimeLimit: Double

    /// The name of a child's control port, registered so that at a
    /// checkpoint every child can resolve a send right into every other.
    static func controlName(coordinatorPID: Int32, incarnation: UInt32) -> String {
        "soak\(coordinatorPID)-c\(incarnation)"
    }

    var controlName: String { Self.controlName(coordinatorPID: coordinatorPID, incarnation: incarnation) }

    var arguments: [String] {
        ["child", "--incarnation", "\(incarnation)", "--coordinator-pid", "\(coordinatorPID)",
         "--coordinator", coordinatorName, "--threads", "\(threads)", "--ports", "\(portsPerWorker)",
         "--streams", "\(streamsPerWorker)", "--burst", "\(maxBurst)", "--seed", "\(seed)",
         "--lifetime", "\(lifetimeLimit)"]
    }

    init(incarnation: UInt32, coordinatorPID: Int32, coordinatorName: String, threads: Int, portsPerWorker: Int,
         streamsPerWorker: Int, maxBurst: Int, seed: UInt64, lifetimeLimit: Double) {
        self.incarnation = incarnation
        self.coordinatorPID = coordinatorPID
        self.coordinatorName = coordinatorName
        self.threads = threads
        self.portsPerWorker = portsPerWorker
        self.streamsPerWorker = streamsPerWorker
        self.maxBurst = maxBurst
        self.seed = seed
        self.lifetimeLimit = lifetimeLimit
    }

    /// Parses what `arguments` wrote (after "child").
    init(parsing arguments: ArraySlice<String>) throws(UsageError) {
        var values: [String: String] = [:]
        var rest = arguments
        while let flag = rest.popFirst() {
            guard flag.hasPrefix("--"), let value = rest.popFirst() else { throw UsageError("child: bad argument \(flag)") }
            values[String(flag.dropFirst(2))] = value
        }
        func value<T: LosslessStringConvertible>(_ name: String) throws(UsageError) -> T {
            guard let text = values[name], let value = T(text) else { throw UsageError("child: --\(name) missing or invalid") }
            return value
        }
        self.init(incarnation: try value("incarnation"), coordinatorPID: try value("coordinator-pid"),
                  coordinatorName: try value("coordinator"), threads: try value("threads"),
                  portsPerWorker: try value("ports"), streamsPerWorker: try value("streams"),
                  maxBurst: try value("burst"), seed: try value("seed"), lifetimeLimit: try value("lifetime"))
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
