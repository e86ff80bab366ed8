/// A block queued with `perform` (S-BLK-1): it runs once, or, if its loop
/// goes first or its tag is cancelled, `discarded` tells whoever waits for
/// it why (`.loopGone`, `.cancelled`). Or a job of the loop's executor
/// (S-EXEC-1), in the same queue so that blocks and jobs run in the order
/// they came: a job is never discarded (a LoopThread's stop runs it).
struct PendingBlock {
    let modes: ModeSelector
    let body: @Sendable () -> Void
    /// Where it was queued (`origin` without its tag): no reference to
    /// count, so copying a block in and out of the queue stays cheap.
    private let file: StaticString
    private let line: UInt
    /// What few blocks carry, boxed so that a plain perform copies,
    /// retains and releases none of it: a tag, and whom to tell if it is
    /// discarded.
    private let extras: Extras?

    private final class Extras: Sendable {
        let tag: String?
        let discarded: (@Sendable (RunLoopError) -> Void)?
        init(tag: String?, discarded: (@Sendable (RunLoopError) -> Void)?) {
            self.tag = tag
            self.discarded = discarded
        }
    }

    init(modes: ModeSelector, body: @escaping @Sendable () -> Void, discarded: (@Sendable (RunLoopError) -> Void)?, origin: BlockOrigin) {
        self.modes = modes
        self.body = body
        file = origin.file
        line = origin.line
        extras = origin.tag == nil && discarded == nil ? nil : Extras(tag: origin.tag, discarded: discarded)
    }

    /// Who queued it, for the monitor's `CalloutReport.origin`.
    var origin: BlockOrigin { BlockOrigin(tag: extras?.tag, file: file, line: line) }

    /// The tag it was queued with, for `cancelPerformRequests(tag:)`.
    var tag: String? { extras?.tag }

    /// Whom to tell if it is discarded unrun (its loop went, or its tag
    /// was cancelled): whoever waits for it.
    var discarded: (@Sendable (RunLoopError) -> Void)? { extras?.discarded }

    /// A job of the loop's executor. The job rides in `modes` (one word:
    /// no closure is made per job, and a plain perform's block is no larger
    /// than before); it runs in the executor's modes
    /// (`BlockQueue.jobModes`), on the loop's executors (`LoopState.jobExecutors`).
    init(job: UnownedJob, asTaskJob: Bool) {
        modes = asTaskJob ? .taskJob(job) : .job(job)
        body = Self.noBody
        file = BlockOrigin.executorJob.file
        line = BlockOrigin.executorJob.line
        extras = nil
    }

    /// A job's body: never called (the job runs instead).
    private static let noBody: @Sendable () -> Void = {}

    /// The job, if this is one, and whether it came as a task job.
    var job: (job: UnownedJob, isTaskJob: Bool)? {
        switch modes {
        case let .job(job): (job, false)
        case let .taskJob(job): (job, true)
        default: nil
        }
    }

    /// A plain perform's block: order 0, no tag, no one to tell if it is
    /// discarded, not a job. Only such blocks are taken several at a time
    /// (`BlockQueue.takePlainHead`): nothing outside the loop's thread can
    /// reach them once taken.
    var isPlain: Bool {
        guard extras == nil else { return false }
        switch modes {
        case .job, .taskJob, .ordered: return false
        default: return true
        }
    }

    var isJob: Bool {
        switch modes {
        case .job, .taskJob: true
        default: false
        }
    }

    /// Foundation's performer order: at a block step, lower orders run
    /// first, equal orders in the order queued. 0 for a plain perform.
    var order: Int {
        if case let .ordered(ordered) = modes { return ordered.order }
        return 0
    }

    /// The handle that may cancel it before it starts; nil for a plain perform.
    var request: PerformRequest? {
        if case let .ordered(ordered) = modes { return ordered.request }
        return nil
    }
}

/// Where a block or a delayed perform was queued: the caller's tag, and the
/// `#fileID` and `#line` of the call. Kept raw (a `StaticString` and a
/// `UInt`, neither of which allocates; a nil tag does not either), so that
/// queuing a block costs nothing more while no monitor is set; the public
/// `RunLoop.CalloutOrigin`, which makes a `String` of the file, is built only
/// when a monitor is about to be told.
struct BlockOrigin: Sendable {
    let tag: String?
    let file: StaticString
    let line: UInt

    /// A job's: the runtime queued it, from no call site of the user's.
    static let executorJob = BlockOrigin(tag: nil, file: "(Swift concurrency job)", line: 0)

    /// The form a monitor sees. Makes a `String`: call it only for a monitor.
    var calloutOrigin: RunLoop.CalloutOrigin {
        RunLoop.CalloutOrigin(tag: tag, file: file.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }, line: line)
    }
}
