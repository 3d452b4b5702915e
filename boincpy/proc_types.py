"""Processor types, in BOINC's order (lib/common_defs.h PROC_TYPE_*).

``PROC_TYPE_NAMES`` are the names in messages (proc_type_name),
``PROC_TYPE_XML`` the ``<coproc><type>`` names of replies and app versions
(proc_type_name_xml).  No imports: the scheduler's request path reads these
on every request (boincpy.states would bring in ``enum``).
"""

PROC_CPU, PROC_NVIDIA, PROC_AMD, PROC_INTEL, PROC_APPLE = range(5)
NPROC_TYPES = 5
PROC_TYPE_NAMES = ("CPU", "NVIDIA GPU", "AMD/ATI GPU", "Intel GPU", "Apple GPU")
PROC_TYPE_XML = ("CPU", "NVIDIA", "ATI", "intel_gpu", "apple_gpu")
