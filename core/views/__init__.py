"""What the dashboard pages show, computed without Streamlit: one module per view.

Every function here is a small, pure function over core results that returns a frozen
dataclass or a DataFrame with documented columns, so that ``pages/`` only lay out widgets.
Import from the module of the view (nothing is re-exported here, so opening a page loads only
the views it uses):

- :mod:`core.views.formatting`: tables every widget can render, raw cells as people read them,
  number lists typed into a text box;
- :mod:`core.views.uploads`: uploaded tables and block files read from bytes, the staged
  loaders of paired / unpaired / screening uploads, the session state of an upload, and the
  interactive sample size of a large table;
- :mod:`core.views.tabular`: one audit's tables (dataset columns, evidence groups,
  predictions) and one sample's (raw values, removal steps, path evidence, what-if, bundle);
- :mod:`core.views.ranking`: the review queue, its decisions, capture curves and the score
  summary of a ranked population;
- :mod:`core.views.comparison`: several models' audits of one table side by side;
- :mod:`core.views.paired`: the Paired bounds page (evaluation rows, τ of a model, grid
  summary, policy comparison, unpaired class summary);
- :mod:`core.views.screening`: the Recapture queue page (coverage by budget, thumbnails);
- :mod:`core.views.commands`: the CLI lines that run the interactive settings on a full table.

Heavy modules (scipy.stats, sklearn, torch, PIL, yaml, pyarrow…) are imported inside the
function that needs them: these modules are on the dashboard's cold-start path.
"""
