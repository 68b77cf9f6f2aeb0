"""Rewrites the committed run records (``docs/**/*.json``) without the paths of the machines that made them.

  python -m experiments.portable_records [--check]

``records.portable_record`` on each file's text: the shared data as ``../shared/data`` (a rerun's
``--config.data.data_dir``, relative to the checkout), files of the repository relative to it, an installed
package's files as ``site-packages/...``, and the scratch ``--workdir`` of a reproduce script left out of its
command. Nothing else of a record changes (text-level, byte for byte elsewhere); ``records.write`` does the same for
every new record. ``--check``: rewrite nothing, list the records that still name such a path, exit 1 if any.
"""

import argparse
import sys
from pathlib import Path

from implicit_jax.engine import cli
from experiments import records

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument('--check', action='store_true', help='list the records a rewrite would change; exit 1 if any')
  args = parser.parse_args()
  changed = []
  for path in sorted((ROOT / 'docs').rglob('*.json')):
    text = path.read_text()
    portable = records.portable_record(text)
    if portable != text:
      changed.append(path.relative_to(ROOT))
      if not args.check:
        tmp = path.with_suffix('.json.tmp')
        tmp.write_text(portable)
        tmp.replace(path)
  print(f'{len(changed)} records {"name a machine path" if args.check else "rewritten"}'
        + ''.join(f'\n  {p}' for p in changed[:20]) + ('\n  ...' if len(changed) > 20 else ''))
  return 1 if args.check and changed else 0


if __name__ == '__main__':
  sys.exit(cli.guarded(main))
