/// A least-recently-used map bounded by total cost and by count, with O(1) lookup, insert,
/// touch and eviction (a doubly linked list threaded through an array, plus a dictionary).
///
/// A plain value type: the owner guards it (an actor or a mutex).
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var cost: Int
        var newer: Int  // towards the head (most recent); -1 at the head
        var older: Int  // towards the tail (least recent); -1 at the tail
    }

    private var nodes: [Node] = []
    private var free: [Int] = []
    private var index: [Key: Int] = [:]
    private var head = -1
    private var tail = -1

    /// Largest total cost kept; inserting past it evicts from the least recent end.
    var costLimit: Int
    /// Largest number of entries kept.
    var countLimit: Int
    /// Sum of the costs of the entries.
    private(set) var totalCost = 0

    init(costLimit: Int = .max, countLimit: Int = .max) {
        self.costLimit = costLimit
        self.countLimit = countLimit
    }

    var count: Int { index.count }

    /// The value for `key`, marking it most recently used.
    mutating func value(forKey key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        moveToHead(slot)
        return nodes[slot].value
    }

    /// The value for `key`, without changing the order.
    func peek(_ key: Key) -> Value? {
        index[key].map { nodes[$0].value }
    }

    /// Inserts or replaces `key` as the most recent entry, then evicts least recent entries
    /// (never the new one) until both limits hold. Returns what was evicted.
    @discardableResult
    mutating func insert(_ value: Value, forKey key: Key, cost: Int) -> [(key: Key, value: Value)] {
        if let slot = index[key] {
            totalCost += cost - nodes[slot].cost
            nodes[slot].value = value
            nodes[slot].cost = cost
            moveToHead(slot)
        } else {
            let node = Node(key: key, value: value, cost: cost, newer: -1, older: -1)
            let slot: Int
            if let reused = free.popLast() {
                nodes[reused] = node
                slot = reused
            } else {
                nodes.append(node)
                slot = nodes.count - 1
            }
            index[key] = slot
            totalCost += cost
            linkAtHead(slot)
        }
        var evicted: [(key: Key, value: Value)] = []
        while (totalCost > costLimit || count > countLimit), tail != -1, tail != index[key] {
            if let removed = removeLeastRecent() { evicted.append((removed.key, removed.value)) }
        }
        return evicted
    }

    /// Replaces the value and cost of `key`, if present, keeping its place in the order, then
    /// evicts least recent entries (never this one) until both limits hold.
    mutating func replace(_ value: Value, forKey key: Key, cost: Int) {
        guard let slot = index[key] else { return }
        totalCost += cost - nodes[slot].cost
        nodes[slot].value = value
        nodes[slot].cost = cost
        while totalCost > costLimit, tail != -1, tail != slot {
            _ = removeLeastRecent()
        }
    }

    /// Removes and returns the least recently used entry.
    mutating func removeLeastRecent() -> (key: Key, value: Value, cost: Int)? {
        guard tail != -1 else { return nil }
        let node = nodes[tail]
        _ = removeValue(forKey: node.key)
        return (node.key, node.value, node.cost)
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        unlink(slot)
        totalCost -= nodes[slot].cost
        free.append(slot)
        return nodes[slot].value
    }

    mutating func removeAll() {
        nodes.removeAll()
        free.removeAll()
        index.removeAll()
        head = -1
        tail = -1
        totalCost = 0
    }

    /// Keys from most to least recently used.
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = head
        while slot != -1 {
            keys.append(nodes[slot].key)
            slot = nodes[slot].older
        }
        return keys
    }

    private mutating func moveToHead(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    private mutating func linkAtHead(_ slot: Int) {
        nodes[slot].newer = -1
        nodes[slot].older = head
        if head != -1 { nodes[head].newer = slot }
        head = slot
        if tail == -1 { tail = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (nodes[slot].newer, nodes[slot].older)
        if newer != -1 { nodes[newer].older = older } else { head = older }
        if older != -1 { nodes[older].newer = newer } else { tail = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }
}

extension LRUCache {
    /// Checks the structure: the list runs head to tail through every indexed slot exactly once,
    /// its links agree both ways, free slots are not indexed, and the total cost is the sum of
    /// the costs. Tests call it after every operation (swift-collections' invariant habit).
    /// - Returns: the first violation found, or `nil`.
    func invariantViolation() -> String? {
        var seen = Set<Int>()
        var slot = head
        var previous = -1
        var cost = 0
        while slot != -1 {
            guard slot >= 0, slot < nodes.count else { return "slot \(slot) is out of range" }
            guard seen.insert(slot).inserted else { return "the list has a cycle at slot \(slot)" }
            let node = nodes[slot]
            guard node.newer == previous else { return "slot \(slot) links back to \(node.newer), not \(previous)" }
            guard index[node.key] == slot else { return "slot \(slot) is not indexed under its key" }
            cost += node.cost
            previous = slot
            slot = node.older
        }
        if previous != tail { return "the list ends at \(previous), the tail is \(tail)" }
        if seen.count != index.count { return "\(seen.count) slots are linked, \(index.count) keys are indexed" }
        if cost != totalCost { return "costs add up to \(cost), totalCost says \(totalCost)" }
        if free.contains(where: seen.contains) { return "a free slot is still linked" }
        if Set(free).count != free.count { return "a slot is free twice" }
        if seen.count + free.count != nodes.count { return "\(nodes.count - seen.count - free.count) slots are lost" }
        return nil
    }
}
