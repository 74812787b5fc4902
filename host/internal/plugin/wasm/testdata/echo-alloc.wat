;; echo-alloc: the bare ABI of the first hosts, a buffer per call
;; (sextant_alloc), answering every request with its own bytes. It is not
;; a plugin (describe answers with the request too): the transport tests and
;; benchmarks use it to measure and check RoundTrip alone.
;; Rebuild: wat2wasm echo-alloc.wat -o echo-alloc.wasm (wabt 1.0.32).
(module
  (memory (export "memory") 1)
  ;; requests counts the calls of sextant_alloc, for the tests.
  (global $requests (mut i32) (i32.const 0))
  (global $cap (mut i32) (i32.const 0))
  (func (export "sextant_api") (result i32) (i32.const 1))
  (func (export "sextant_requests") (result i32) (global.get $requests))
  ;; The buffer starts at 64 KiB; memory grows to hold size bytes.
  (func (export "sextant_alloc") (param $size i32) (result i32)
    (local $need i32)
    (global.set $requests (i32.add (global.get $requests) (i32.const 1)))
    (local.set $need
      (i32.shr_u (i32.add (i32.add (local.get $size) (i32.const 65536)) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $cap (local.get $size))
    (i32.const 65536))
  (func (export "sextant_call") (param $ptr i32) (param $len i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len))))
)
