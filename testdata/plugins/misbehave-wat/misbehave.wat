;; misbehave-wat: a plugin module, not written in Go, that breaks the wasm
;; ABI (sdk/PROTOCOL-wasm.md) in the ways a Go plugin cannot, for the
;; transport's containment tests. The method picks the misbehaviour:
;;
;;   describe            a valid Info
;;   gate.check          claims a response of 104857672 bytes (over the limit)
;;   provider.chat       points its response past the end of memory
;;   navigator.load      traps (unreachable)
;;   navigator.start     answers with a zero (empty) response
;;   navigator.next      grows memory until refused, then traps
;;   navigator.io        loops forever
;;
;; Rebuild misbehave.wasm after editing this file (wabt, Debian package
;; "wabt") and update the sha256 in plugin.toml: `go generate
;; ./host/plugin/wasm` does both; `make wat` only rebuilds.
(module
  (memory (export "memory") 1)
  (data (i32.const 1024)
    "{\"result\":{\"name\":\"misbehave-wat\",\"kind\":\"gate\",\"version\":\"0.0.1\",\"api\":1,\"description\":\"breaks the wasm ABI on request (transport tests)\"}}")

  (func (export "sextant_api") (result i32) (i32.const 1))

  ;; Requests always land at 4096; they are small in these tests.
  (func (export "sextant_alloc") (param $size i32) (result i32)
    (if (i32.gt_u (i32.add (local.get $size) (i32.const 4096)) (i32.const 65536))
      (then (return (i32.const 0))))
    (i32.const 4096))

  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or
      (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
      (i64.extend_i32_u (local.get $len))))

  ;; Byte 19 of {"api":1,"method":"... is the method's first letter; byte
  ;; 29 is the letter after "navigator.".
  (func (export "sextant_call") (param $ptr i32) (param $len i32) (result i64)
    (local $c i32)
    (local.set $c (i32.load8_u offset=19 (local.get $ptr)))
    (if (i32.eq (local.get $c) (i32.const 0x64)) ;; 'd' describe
      (then (return (call $pack (i32.const 1024) (i32.const 140)))))
    (if (i32.eq (local.get $c) (i32.const 0x67)) ;; 'g' gate.check
      (then (return (call $pack (i32.const 0) (i32.const 104857672)))))
    (if (i32.eq (local.get $c) (i32.const 0x70)) ;; 'p' provider.chat
      (then (return (call $pack (i32.const 65000) (i32.const 1000)))))
    (local.set $c (i32.load8_u offset=29 (local.get $ptr)))
    (if (i32.eq (local.get $c) (i32.const 0x6c)) ;; 'l' navigator.load
      (then unreachable))
    (if (i32.eq (local.get $c) (i32.const 0x73)) ;; 's' navigator.start
      (then (return (i64.const 0))))
    (if (i32.eq (local.get $c) (i32.const 0x6e)) ;; 'n' navigator.next
      (then
        (loop $grow
          (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        unreachable))
    (loop $forever (br $forever))
    (i64.const 0))
)
