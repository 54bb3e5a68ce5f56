//! What every fuzz target shares: a stack overflow becomes a crash libFuzzer
//! records (with the input saved), not a bare SIGSEGV that loses it.

/// Lowers the stack limit to 256 KiB (so deep nesting overflows within the
/// input size limit) and turns SIGSEGV into an abort on an alternate stack.
/// Runs before libFuzzer installs its own handlers (`fuzz_target!(init: …)`).
pub fn stack_overflow_is_a_crash() {
    unsafe extern "C" fn on_segv(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
        let m = b"\n==fuzz== SIGSEGV (stack overflow?)\n";
        unsafe {
            libc::write(2, m.as_ptr().cast(), m.len());
            libc::abort();
        }
    }
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_STACK, &mut rl);
        rl.rlim_cur = 256 * 1024;
        libc::setrlimit(libc::RLIMIT_STACK, &rl);
        let size = 1 << 20;
        let sp = libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(sp, libc::MAP_FAILED);
        let ss = libc::stack_t {
            ss_sp: sp,
            ss_flags: 0,
            ss_size: size,
        };
        assert_eq!(libc::sigaltstack(&ss, std::ptr::null_mut()), 0);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_segv as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        assert_eq!(libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut()), 0);
    }
}
