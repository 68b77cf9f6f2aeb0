r"""Writes quickstart.ipynb and energy_analysis.ipynb (outputs stripped) from the cell sources below.

  python notebooks/build_notebooks.py

Edit the cells here, not in the .ipynb files; tests/test_notebooks.py checks the two agree and executes both.
Both notebooks read IMPLICIT_JAX_NOTEBOOK_CONFIG ('tiny' in the test suite; default: the real bibtex config).
"""

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

INSTALL = '''\
# The repository's configs/ and the installed package. In a checkout (notebooks/ beside configs/) nothing is
# fetched; in Colab the repository is cloned and installed. Set REPO to your clone or fork.
import importlib.util, os, subprocess, sys
REPO = 'https://github.com/implicit-jax/implicit_jax'
ROOT = os.path.abspath('..') if os.path.isdir('../configs') else os.path.abspath('implicit_jax')
if not os.path.isdir(os.path.join(ROOT, 'configs')):
    subprocess.run(['git', 'clone', '-q', REPO, ROOT], check=True)
if importlib.util.find_spec('implicit_jax') is None:
    subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', f'{ROOT}[plot]'], check=True)'''

CONFIG = '''\
import os, tempfile
from implicit_jax.engine import checkpoints, config as config_lib, train

# 'bibtex' (a few minutes on a CPU; the data ships inside the package) or 'tiny' (seconds, synthetic data).
WHICH = os.environ.get('IMPLICIT_JAX_NOTEBOOK_CONFIG', 'bibtex')
config = config_lib.from_file(os.path.join(ROOT, 'configs', f'{WHICH}.py'))
workdir = os.path.join(tempfile.gettempdir(), 'implicit_jax_notebooks', WHICH)
print(WHICH, '->', workdir)'''

QUICKSTART = [
    ('markdown', '# implicit_jax quickstart\n\nTrain the energy `E_phi(x, y)` and the inference network '
                 '`A_theta(x)` with implicit gradients, evaluate the saved model, plot the training curves.'),
    ('code', INSTALL),
    ('code', CONFIG),
    ('markdown', '## Train\n\nThe run checkpoints into `workdir`; running this cell again resumes (or, when the '
                 'run is complete, just re-evaluates).'),
    ('code', 'result = train.train_and_evaluate(config, workdir)\n'
             "print(f\"test example-F1 {result['test_f1']:.4f} at 0.5, {result['test_f1_tuned']:.4f} at the "
             "dev-tuned threshold {result['threshold']:.2f}\")"),
    ('markdown', '## Evaluate the saved (best-on-dev) model'),
    ('code', 'run = checkpoints.load_trained(workdir)\n'
             "test = run.task.splits['test']\n"
             'probs = run.predict(test)\n'
             "scores = run.task.evaluator.score(probs, test, {'threshold': result['threshold']})\n"
             'print(scores)\n'
             "assert abs(scores['at_tuned']['example_f1'] - result['test_f1_tuned']) < 1e-9"),
    ('markdown', '## Training curves'),
    ('code', 'from implicit_jax.engine import plots\n'
             "plots.plot_training_curves(result, os.path.join(workdir, 'curves.png'), skip=('dev_threshold',))\n"
             'from IPython.display import Image\n'
             "Image(os.path.join(workdir, 'curves.png'))"),
]

ENERGY = [
    ('markdown', '# What did the energy learn?\n\nThe supplement compares the Hessian of the learned energy '
                 'with respect to y, averaged over examples, with the label co-occurrence matrix (diagonals '
                 'removed). Lower energy is better here, so co-occurring labels should show a *positive* entry in '
                 'the Hessian of the score `-E`.'),
    ('code', INSTALL),
    ('code', CONFIG),
    ('code', "result = train.train_and_evaluate(config, workdir)  # resumes or reuses a finished run\n"
             'run = checkpoints.load_trained(workdir)'),
    ('code', 'from implicit_jax.tasks.mlc import analysis\n'
             "x, y = run.task.splits['train']['x'], run.task.splits['train']['y']\n"
             "energy = run.modules['energy']\n"
             'score_hessian = -analysis.energy_hessian_y(energy.apply, run.params[\'phi\'], x, y)\n'
             'cooc = analysis.label_cooccurrence(y)\n'
             'corr = analysis.offdiagonal_correlation(score_hessian, cooc)\n'
             'print(corr)'),
    ('code', "path = os.path.join(workdir, 'hessian_vs_cooccurrence.png')\n"
             'analysis.plot_hessian_vs_cooccurrence(score_hessian, cooc, path, title=WHICH)\n'
             'from IPython.display import Image\n'
             'Image(path)'),
]


def notebook(cells):
  nb = nbformat.v4.new_notebook()
  nb.metadata = {'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'},
                 'language_info': {'name': 'python'}}
  nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == 'markdown' else nbformat.v4.new_code_cell(src)
              for kind, src in cells]
  for i, cell in enumerate(nb.cells):
    cell['id'] = f'cell-{i}'  # stable ids: rebuilding gives the same file
  return nb


NOTEBOOKS = {'quickstart.ipynb': QUICKSTART, 'energy_analysis.ipynb': ENERGY}


def main():
  for name, cells in NOTEBOOKS.items():
    nbformat.write(notebook(cells), HERE / name)
    print('wrote', HERE / name)


if __name__ == '__main__':
  main()
