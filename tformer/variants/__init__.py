"""Changes to the 2017 design that answer its costs (chapter 13).

- ``efficient``: grouped-query / multi-query attention, sliding-window masks, linear attention.
- ``moe``: a mixture-of-experts feed-forward layer with top-k routing.
"""
