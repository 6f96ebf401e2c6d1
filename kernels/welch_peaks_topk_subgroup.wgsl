// The top-k's workgroup-wide maximum with subgroup operations (pasted in
// for the TOPK placeholder where the adapter has them: wgpu's SUBGROUP
// feature): each subgroup's largest head by two subgroupMax (the high
// words, then the low words among the lanes holding the winning high
// word), one slot per subgroup in workgroup memory, and the same two
// reductions over the slots in every subgroup. One barrier a round: the
// slots alternate between two halves by round, so a round's writes never
// meet the previous round's reads.

// The invocation ids the top-k needs (an entry point argument).
struct Lane {
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_invocation_id) id: u32,
    @builtin(subgroup_size) size: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
}

// The largest key of the subgroup's lanes, returned to each of them.
fn subgroup_best(key: vec2<u32>) -> vec2<u32> {
    let hi = subgroupMax(key.x);
    let lo = subgroupMax(select(0u, key.y, key.x == hi));
    return vec2<u32>(hi, lo);
}

// The largest of every thread's `head`, returned to every thread. Call
// from uniform control flow (it has a barrier). The scratch holds at least
// WG keys and a subgroup at least 4 lanes (wgpu's minimum), so two halves
// of `subgroups` slots fit; a one-thread workgroup has no other thread to
// race with and keeps one slot.
fn block_max(lane: Lane, head: vec2<u32>, round: u32) -> vec2<u32> {
    let slots = select(0u, (round % 2u) * lane.subgroups, WG > 1u);
    let best = subgroup_best(head);
    // The subgroup's first active lane writes (WGSL has no subgroupElect).
    if (lane.id == subgroupBroadcastFirst(lane.id)) {
        scratch_set(slots + lane.subgroup, best);
    }
    workgroupBarrier();
    var mine = vec2<u32>(0u, 0u);
    for (var i = lane.id; i < lane.subgroups; i += lane.size) {
        let other = scratch_get(slots + i);
        if (greater(other, mine)) {
            mine = other;
        }
    }
    return subgroup_best(mine);
}
