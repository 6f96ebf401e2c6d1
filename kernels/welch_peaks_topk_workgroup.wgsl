// The top-k's workgroup-wide maximum in workgroup memory alone (pasted in
// for the TOPK placeholder where the adapter has no subgroup operations):
// a tree over the threads' heads, log2(WG) barriers a round.

// The invocation ids the top-k needs (an entry point argument).
struct Lane {
    @builtin(local_invocation_index) tid: u32,
}

// The largest of every thread's `head`, returned to every thread. Call
// from uniform control flow (it has barriers).
fn block_max(lane: Lane, head: vec2<u32>, round: u32) -> vec2<u32> {
    let tid = lane.tid;
    scratch_set(tid, head);
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
        if (tid < stride && greater(scratch_get(tid + stride), scratch_get(tid))) {
            scratch_set(tid, scratch_get(tid + stride));
        }
        workgroupBarrier();
    }
    let win = scratch_get(0u);
    // The scratch is written again next round.
    workgroupBarrier();
    return win;
}
