"""The red team: a budgeted search for cheap replies that beat an env's honest one.

It uses nothing but an env's public scoring API (``score_batch``, ``reference_answer``,
``bare_answer``, ``canaries``, the flat prompt), so it runs on any affectgym text env, built-in
or plug-in, under whatever scorer the env was made with:

* :mod:`affectgym.redteam.material`: the kinds of material, generated for each scenario;
* :mod:`affectgym.redteam.grammar`: the six operations that put material into a reply;
* :mod:`affectgym.redteam.search`: random sampling then a hill-climb, per family, per scenario;
* :mod:`affectgym.redteam.runner`: a resumable run over a split (:func:`red_team`);
* :mod:`affectgym.redteam.report`: the share each family wins, the best reply it found.

``affectgym redteam ENV`` is the command; ``affectgym validate`` runs the same search in its
``hack_surface`` and ``reward_pays_skill`` checks.
"""

from affectgym.redteam.report import RedTeamReport
from affectgym.redteam.runner import policy_replies_from, red_team
from affectgym.redteam.search import search_scenario

__all__ = ["RedTeamReport", "policy_replies_from", "red_team", "search_scenario"]
