/// Polls until `isDone` holds, giving up only once `progress` has stayed the same for
/// `stallLimit`: a wait for something that may be slow without being stuck, such as deliveries
/// that other threads' posts hold up. Returns whether `isDone` held.
@discardableResult
func waitWhileProgressing(
    until isDone: () -> Bool, progress: () -> Int, stallLimit: Duration, polling interval: Duration = .milliseconds(1)
) async -> Bool {
    var last = progress()
    var lastChange = ContinuousClock.now
    while !isDone() {
        let now = progress()
        if now != last {
            last = now
            lastChange = .now
        } else if ContinuousClock.now - lastChange > stallLimit {
            return false
        }
        try? await Task.sleep(for: interval)
    }
    return true
}
