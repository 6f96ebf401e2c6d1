// Helpers both WGSL kernels share (appended to each when specialised): the
// per-bin weight and the integer keys whose order is the peak order.

fn weight(j: u32) -> f32 {
    if (DOUBLING && j != 0u && j != BINS - 1u) {
        return 2.0 * SCALE;
    }
    return SCALE;
}

// A key whose (hi, lo) order is the peak order: the power's bits made
// monotonic with every NaN on top, then the complemented bin.
fn key_of(power: f32, bin: u32) -> vec2<u32> {
    let bits = bitcast<u32>(power);
    var hi: u32;
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0u) {
        hi = 0xffffffffu;
    } else if ((bits >> 31u) == 1u) {
        hi = ~bits;
    } else {
        hi = bits | 0x80000000u;
    }
    return vec2<u32>(hi, ~bin);
}

fn power_of(key: vec2<u32>) -> f32 {
    if (key.x >= 0x80000000u) {
        return bitcast<f32>(key.x & 0x7fffffffu);
    }
    return bitcast<f32>(~key.x);
}

fn greater(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}
