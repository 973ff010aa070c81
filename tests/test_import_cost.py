"""``import calipers`` stays light: heavy libraries are imported where they are used.

(The CLI starts with this import; matplotlib, torch and most of SciPy take seconds.)
"""

import subprocess
import sys


def test_import_does_not_pull_heavy_modules() -> None:
    code = (
        "import sys, calipers\n"
        "heavy = ['matplotlib', 'torch', 'scipy.signal', 'scipy.stats', 'scipy.special',\n"
        "         'scipy.spatial', 'scipy.optimize', 'pandas', 'pyarrow']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""
