;; bad-api-wat: a plugin module that speaks wire protocol version 2, which
;; this host does not. The host must refuse it when it opens it.
;;
;; Rebuild bad.wasm after editing this file (wabt, Debian package "wabt")
;; and update the sha256 in plugin.toml: `go generate ./host/plugin/wasm`
;; does both; `make wat` only rebuilds.
(module
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"error\":{\"code\":\"internal\",\"message\":\"bad-api-wat speaks api 2\"}}")
  (func (export "sextant_api") (result i32)
    (i32.const 2))
  (func (export "sextant_alloc") (param $size i32) (result i32)
    (i32.const 4096))
  (func (export "sextant_call") (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.const 1024) (i64.const 32)) (i64.const 66)))
)
