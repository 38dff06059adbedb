// Planted bug for stress.sh: the symmetric protocol's release gives the lock back with a plain
// store instead of an exchange, so its read of `sleepers` can pass the store.
#define __atomic_exchange_n(pointer, value, order) (__atomic_store_n((pointer), (value), __ATOMIC_RELAXED), 0)
