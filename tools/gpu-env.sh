# Source at the start of every GPU-machine command, from the project's root:
#   source tools/gpu-env.sh
# Installs the carried wheels (.whl/, e.g. numpy 2.4.6: numba-cuda 0.30.4 does not import with
# the machine's numpy 2.5) into /tmp/site and puts them and the project on PYTHONPATH.
# (Project copy of the reference in ../shared/gpu/device-env.sh, which the GPU machine lacks.)
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
python3 -c "import numpy, numba, cupy; from numba import cuda; d = cuda.get_current_device(); n = d.name; print('gpu env: numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__, 'gpu', n.decode() if isinstance(n, bytes) else n)"
