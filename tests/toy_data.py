"""Small data sets shared by several test modules (values from docs/how-calipers-computes.md)."""

import numpy as np

#: docs/how-calipers-computes.md §3.4: the Nixon et al. toy example (K = 3, N = 6)
NIXON_P = np.array(
    [
        [0.6, 0.3, 0.1],
        [0.4, 0.4, 0.2],
        [0.8, 0.1, 0.1],
        [0.2, 0.5, 0.3],
        [0.98, 0.015, 0.005],
        [0.34, 0.33, 0.33],
    ]
)
NIXON_Y = np.array([0, 1, 0, 2, 0, 1])
