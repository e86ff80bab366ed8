import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// ZMQ_FD and ZMQ_EVENTS: what a run loop waits on, and how it learns a socket is ready.
@Suite(.blocksThreads) struct ReadinessTests {
    /// Waits until `fd` is readable; false when the hang guard expires.
    private func waitReadable(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, hangGuardMilliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready == 1 && entry.revents & Int16(POLLIN) != 0
        }
    }

    @Test func fileDescriptorSignalsAndEventsReportPollInUntilDrained() throws {
        let (receiver, sender) = try connectedSockets(.pair, .pair, label: "readiness")
        defer { receiver.close(); sender.close() }
        let fd = try receiver.fileDescriptor
        #expect(fd >= 0)
        #expect(try receiver.fileDescriptor == fd, "the descriptor is the socket's for life")

        // Reading events processes pending commands (the connection) and, finding nothing
        // to read, arms the pipe so that the next message signals the descriptor.
        #expect(try !receiver.events.contains(.pollIn))
        #expect(try sender.events.contains(.pollOut))

        try sender.send("one")
        try sender.sendMultipart([Data("two".utf8), Data("parts".utf8)])
        #expect(waitReadable(fd), "a message from the peer signals ZMQ_FD")
        #expect(try receiver.events.contains(.pollIn))

        let message = Message()
        var frames = 0
        while try receiver.receive(into: message, dontWait: true) { frames += 1 }
        #expect(frames == 3)
        #expect(try !receiver.events.contains(.pollIn), "drained: nothing left to read")
    }

    @Test func eventsOfAFullSenderLackPollOut() throws {
        let push = try ZMQContext.shared.makeSocket(.push)
        #expect(try !push.events.contains(.pollOut), "no peer, nowhere to send")
        let pull = try ZMQContext.shared.makeSocket(.pull)
        defer { push.close(); pull.close() }
        let endpoint = uniqueInprocEndpoint("pollout")
        try pull.bind(endpoint)
        try push.connect(endpoint)
        #expect(try push.events.contains(.pollOut))
    }

    @Test func optionSetBitsAreLibzmqPollBits() {
        #expect(SocketEvents.pollIn.rawValue == 1)
        #expect(SocketEvents.pollOut.rawValue == 2)
        #expect(SocketEvents.pollError.rawValue == 4)
        #expect(SocketEvents([.pollIn, .pollOut]).rawValue == 3)
    }
}
