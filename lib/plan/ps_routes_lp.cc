// The GRID rate LP (plan/ps_routes.h) with GLPK's simplex. Built only with GLPK.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

#include "plan/ps_routes.h"

#ifdef RINA_HAVE_GLPK
#include <glpk.h>
#endif

namespace rina::plan {

#ifndef RINA_HAVE_GLPK

bool routingLpAvailable() { return false; }

Status solveRoutingLp(const PsRoutingProblem&, RoutingLpResult*) {
  return errorf(rinaInvalidUsage,
                "GRID LP: rina was built without GLPK (install libglpk-dev and re-run cmake)");
}

#else

bool routingLpAvailable() { return true; }

Status solveRoutingLp(const PsRoutingProblem& g, RoutingLpResult* out) {
  RINA_TRY(validateRoutingProblem(g));
  auto t0 = std::chrono::steady_clock::now();
  timespec cpu0;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  // Columns: 1 = r, then f_{w,o} in worker/option order, then y_a.
  std::vector<std::vector<int> > fcol(g.workers.size());
  int ncols = 1;
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (size_t o = 0; o < g.workers[w].options.size(); ++o) fcol[w].push_back(++ncols);
  }
  const int ycol0 = ncols + 1;
  ncols += static_cast<int>(g.nodes.size());

  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  std::vector<double> rowUpper;  // per row; lower bound is 0 for demand rows
  std::vector<char> rowFixed;    // demand rows: == 0
  auto entry = [&](int row, int col, double v) {
    ia.push_back(row), ja.push_back(col), ar.push_back(v);
  };
  int row = 0;
  // Demand: sum_o f - s_g r = 0.
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (size_t grp = 0; grp < g.shares.size(); ++grp) {
      ++row;
      rowUpper.push_back(0), rowFixed.push_back(1);
      for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
        if (g.workers[w].options[o].group == static_cast<int>(grp)) entry(row, fcol[w][o], 1);
      }
      entry(row, 1, -g.shares[grp]);
    }
  }
  // Cover: sum_{o at a} f_{w,o} - y_a <= 0.
  for (size_t w = 0; w < g.workers.size(); ++w) {
    std::vector<int> nodes;
    for (const auto& o : g.workers[w].options) {
      if (o.aggNode >= 0) nodes.push_back(o.aggNode);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (int a : nodes) {
      ++row;
      rowUpper.push_back(0), rowFixed.push_back(0);
      for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
        if (g.workers[w].options[o].aggNode == a) entry(row, fcol[w][o], 1);
      }
      entry(row, ycol0 + a, -1);
    }
  }
  // Capacity of every resource.
  std::vector<std::vector<std::pair<int, double> > > users(g.resources.size());
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
      for (int l : g.workers[w].options[o].path) users[l].push_back({fcol[w][o], 1});
    }
  }
  for (size_t a = 0; a < g.nodes.size(); ++a) {
    for (int l : g.nodes[a].outPath) users[l].push_back({ycol0 + static_cast<int>(a), 1});
  }
  for (size_t l = 0; l < g.resources.size(); ++l) {
    if (users[l].empty()) continue;
    // A path listing a resource twice uses it twice: add up duplicates.
    std::sort(users[l].begin(), users[l].end());
    ++row;
    rowUpper.push_back(g.resources[l].capacity), rowFixed.push_back(0);
    for (size_t k = 0; k < users[l].size();) {
      size_t e = k;
      double v = 0;
      while (e < users[l].size() && users[l][e].first == users[l][k].first)
        v += users[l][e++].second;
      entry(row, users[l][k].first, v);
      k = e;
    }
  }

  // GLPK's terminal output is process-wide; silence it for this solve only.
  const int termWas = glp_term_out(GLP_OFF);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  glp_add_rows(lp, row);
  for (int i = 1; i <= row; ++i) {
    if (rowFixed[i - 1])
      glp_set_row_bnds(lp, i, GLP_FX, 0, 0);
    else
      glp_set_row_bnds(lp, i, GLP_UP, 0, rowUpper[i - 1]);
  }
  glp_add_cols(lp, ncols);
  for (int j = 1; j <= ncols; ++j) glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
  glp_set_obj_coef(lp, 1, 1);
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  glp_scale_prob(lp, GLP_SF_AUTO);
  int rc = glp_simplex(lp, &parm);
  int status = glp_get_status(lp);
  glp_term_out(termWas);
  if (rc == GLP_ENODFS || status == GLP_UNBND) {
    glp_delete_prob(lp);
    return errorf(rinaInvalidArgument,
                  "GRID LP: unbounded (no option of some worker meets a capacity)");
  }
  if (rc != 0 || status != GLP_OPT) {
    glp_delete_prob(lp);
    return errorf(rinaInternalError,
                  "GRID LP: GLPK simplex failed (rc %d, status %d) on %d rows x %d columns", rc,
                  status, row, ncols);
  }
  RoutingLpResult res;
  res.rate = glp_get_col_prim(lp, 1);
  res.rows = row;
  res.cols = ncols;
  res.x.resize(g.workers.size());
  for (size_t w = 0; w < g.workers.size(); ++w) {
    for (size_t o = 0; o < g.workers[w].options.size(); ++o) {
      double s = g.shares[g.workers[w].options[o].group] * res.rate;
      res.x[w].push_back(s > 0 ? glp_get_col_prim(lp, fcol[w][o]) / s : 0);
    }
  }
  glp_delete_prob(lp);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  timespec cpu1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
  res.cpuSeconds = static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) +
                   1e-9 * static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec);
  *out = std::move(res);
  return {};
}

#endif

}  // namespace rina::plan
