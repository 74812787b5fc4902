;; wat-gate: a sextant gate plugin written by hand in WebAssembly text, to
;; show (and test) that the wasm ABI of sdk/PROTOCOL-wasm.md needs no Go and
;; no SDK. It passes every candidate.
;;
;; Rebuild gate.wasm after editing this file (wabt, Debian package "wabt")
;; and update the sha256 in plugin.toml: `go generate ./host/plugin/wasm`
;; does both; `make wat` only rebuilds.
(module
  ;; Memory layout: constant responses at 1024.., the heap from 4096 on.
  (memory (export "memory") 1)

  (data (i32.const 1024)
    "{\"result\":{\"name\":\"wat-gate\",\"kind\":\"gate\",\"version\":\"1.0.0\",\"api\":1,\"description\":\"a gate written in WebAssembly text; always passes\"}}")
  (data (i32.const 1280)
    "{\"result\":{\"ruling\":\"pass\",\"reasons\":[\"wat-gate always passes\"]}}")
  (data (i32.const 1536)
    "{\"error\":{\"code\":\"unknown_method\",\"message\":\"wat-gate answers describe and gate.check only\"}}")
  (data (i32.const 1792)
    "{\"error\":{\"code\":\"bad_request\",\"message\":\"wat-gate: malformed request\"}}")

  (global $heap_base i32 (i32.const 4096))
  (global $heap (mut i32) (i32.const 4096))

  ;; sextant_api: the wire protocol version this module speaks.
  (func (export "sextant_api") (result i32)
    (i32.const 1))

  ;; sextant_alloc: a bump allocator, growing memory as needed. It returns
  ;; 0 when memory cannot grow; the host then fails the call.
  (func (export "sextant_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local $end i32)
    (local.set $ptr (global.get $heap))
    ;; end = align8(ptr + size)
    (local.set $end
      (i32.and
        (i32.add (i32.add (local.get $ptr) (local.get $size)) (i32.const 7))
        (i32.const -8)))
    (if (i32.gt_u (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq
              (memory.grow
                (i32.shr_u
                  (i32.add
                    (i32.sub (local.get $end) (i32.mul (memory.size) (i32.const 65536)))
                    (i32.const 65535))
                  (i32.const 16)))
              (i32.const -1))
          (then (return (i32.const 0))))))
    (global.set $heap (local.get $end))
    (local.get $ptr))

  ;; pack: a response's address in the high 32 bits, its length in the low.
  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len))))

  ;; sextant_call: the host encodes every request as
  ;; {"api":1,"method":"<method>",... so byte 19 is the method's first
  ;; letter: 'd' describe, 'g' gate.check; anything else is refused.
  (func (export "sextant_call") (param $ptr i32) (param $len i32) (result i64)
    (local $c i32)
    ;; The request is consumed here and every response is a constant, so
    ;; the whole heap is free again.
    (global.set $heap (global.get $heap_base))
    (if (i32.lt_u (local.get $len) (i32.const 20))
      (then (return (call $pack (i32.const 1792) (i32.const 72)))))
    (local.set $c (i32.load8_u offset=19 (local.get $ptr)))
    (if (i32.eq (local.get $c) (i32.const 0x64)) ;; 'd'
      (then (return (call $pack (i32.const 1024) (i32.const 136)))))
    (if (i32.eq (local.get $c) (i32.const 0x67)) ;; 'g'
      (then (return (call $pack (i32.const 1280) (i32.const 65)))))
    (call $pack (i32.const 1536) (i32.const 93)))
)
