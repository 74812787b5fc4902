;; noimports: a module without import or global sections of its own
;; (one function), so the rewriter has to create both.
(module
  (func (export "spin") (loop $l (br $l)))
)
