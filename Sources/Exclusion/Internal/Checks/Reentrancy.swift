/// Stops the process because a thread asked for an instance it is already inside.
///
/// Waiting would never end (the access it waits for is its own), so the only honest outcome is to
/// stop, at the line that made the mistake, with a message that says what happened and how to fix
/// it. `fatalError` keeps the message in optimized builds, where `preconditionFailure` drops it.
@usableFromInline
func _reentrantAccess(
    type: String,
    label: String,
    attempted: String,
    holding: String
) -> Never {
    fatalError(
        """
        Exclusion: re-entrant access to \(type) "\(label)": \(attempted) was called on a thread \
        that is already inside \(holding) of the same instance, which would deadlock. \
        Fix: use the state passed to your closure instead of accessing the instance again, or \
        submit the work with an async variant so it runs after the current access.
        """
    )
}
