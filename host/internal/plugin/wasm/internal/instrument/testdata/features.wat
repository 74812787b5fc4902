;; features: every construct the rewriter must renumber or instrument.
;; Rebuild: wat2wasm features.wat -o features.wasm (wabt 1.0.32).
(module
  (import "env" "add" (func $add (param i32 i32) (result i32)))
  (import "envg" "g" (global $g i32))
  (import "env" "twice" (func $twice (param i32) (result i32)))
  (type $unop (func (param i32) (result i32)))
  (memory (export "memory") 1)
  (table $t 4 funcref)
  (global $count (mut i32) (i32.const 0))
  (global $fref funcref (ref.func $inc))
  (elem (table $t) (i32.const 0) func $inc $dec)
  (elem (table $t) (i32.const 2) funcref (ref.func $twice) (ref.func $sq))
  (elem declare func $sq)
  (data (i32.const 16) "hello")
  (start $init)

  (func $init (global.set $count (i32.const 7)))
  (func $inc (type $unop) (i32.add (local.get 0) (i32.const 1)))
  (func $dec (type $unop) (i32.sub (local.get 0) (i32.const 1)))
  (func $sq (type $unop) (i32.mul (local.get 0) (local.get 0)))

  ;; loop n: the sum 0 + 1 + ... + n-1, through call_indirect and $add.
  (func (export "loop") (param $n i32) (result i32)
    (local $i i32) (local $sum i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $sum (call $add (local.get $sum) (local.get $i)))
        (local.set $i (call_indirect (type $unop) (local.get $i) (i32.const 0)))
        (br $next)))
    (local.get $sum))

  ;; table i x: calls table entry i (0 inc, 1 dec, 2 twice, 3 sq).
  (func (export "table") (param i32 i32) (result i32)
    (call_indirect (type $unop) (local.get 1) (local.get 0)))

  ;; fref x: calls the function of the funcref global through a table slot.
  (func (export "fref") (param i32) (result i32)
    (table.set $t (i32.const 1) (global.get $fref))
    (call_indirect (type $unop) (local.get 0) (i32.const 1)))

  ;; refsq x: ref.func in code.
  (func (export "refsq") (param i32) (result i32)
    (table.set $t (i32.const 1) (ref.func $sq))
    (call_indirect (type $unop) (local.get 0) (i32.const 1)))

  (func (export "count") (result i32) (i32.add (global.get $count) (global.get $g)))
  (func (export "twice_sq") (param i32) (result i32) (call $twice (call $sq (local.get 0))))

  ;; fib n, naively recursive and without a loop: the entry check must
  ;; catch it.
  (func $fib (export "fib") (param i32) (result i32)
    (if (result i32) (i32.lt_u (local.get 0) (i32.const 2))
      (then (local.get 0))
      (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                     (call $fib (i32.sub (local.get 0) (i32.const 2)))))))

  ;; spin: loops forever.
  (func (export "spin") (loop $l (br $l)))

  ;; multi: a loop with a parameter on the stack at its header.
  (func (export "multi") (param i32) (result i32)
    (local.get 0)
    (loop $l (param i32) (result i32)
      (i32.const 1)
      (i32.sub)
      (local.tee 0)
      (br_if $l (i32.gt_s (local.get 0) (i32.const 0)))))
)
