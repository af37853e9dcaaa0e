"""`gangplank policy import`: Kueue and Volcano queue manifests → a gangplank policy.

What is carried over keeps its meaning, and the output says how (`Imported.mapped`); what has no
counterpart, or would change meaning, is listed (`Imported.notes`), never dropped silently. One
module per source: kueue (ClusterQueue, LocalQueue; kueue_quota, kueue_cohorts,
kueue_preemption), volcano and volcano_tree (Queue); result holds what they share, reading the
input (each object once: the same object twice is refused, `ImportRefused`, naming both places).
"""

from extender.policy.importing.reading import import_manifests, import_sources
from extender.policy.importing.result import Imported, ImportRefused

__all__ = ["ImportRefused", "Imported", "import_manifests", "import_sources"]
