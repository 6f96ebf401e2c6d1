//! `.npy` inputs: any bytes, any expected shape; an error or a tensor of
//! exactly that shape, never a panic or an allocation the file cannot back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Vec<u8>, Vec<u8>)| {
    let (dims, bytes) = input;
    let shape: Vec<usize> = dims.iter().take(4).map(|d| *d as usize).collect();
    let len = bytes.len() as u64;
    if let Ok(tensor) = rlx_opt::run_cli::read_npy_from(std::io::Cursor::new(&bytes), len, "fuzz.npy", "x", &shape) {
        assert_eq!(tensor.shape, shape);
        assert_eq!(tensor.data.len(), shape.iter().product::<usize>());
    }
});
