"""Models: data (terms, coefficients, error) fitted and printed by separate functions.

Modules (import them directly; this package imports nothing on purpose so that each
model family stays independent):

- ``scaling``  application scaling, t(p) = c0 + c1 * p^i * log2(p)^j chosen by
               leave-one-out cross-validation (Extra-P style)
"""
