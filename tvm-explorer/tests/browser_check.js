// Drives the explorer page in a real browser the way a person would (clicks the mode,
// target, stage and view buttons, picks kernels, hovers source lines) and records what
// each view shows in <pre id="test-results"> as JSON, for tests/browser.rs to check.
// Appended to a copy of the page by that test; not part of the page itself.
(function () {
  const R = { steps: [], errors: [] };
  // An exception in an event handler does not reach the code that clicked.
  window.addEventListener("error", (e) => R.errors.push("uncaught: " + e.message + " at line " + e.lineno + " (kernel " + (q("#kernel") || {}).value + ")"));
  const q = (s, r) => (r || document).querySelector(s);
  const qa = (s, r) => Array.from((r || document).querySelectorAll(s));
  const click = (s) => { const e = q(s); if (!e) throw new Error("no element " + s); e.click(); };
  const text = (s) => { const e = q(s); return e ? e.textContent : ""; };
  const pick = (name) => {
    const sel = q("#kernel");
    const opt = qa("option", sel).find((o) => o.textContent.includes(name + " —"));
    if (!opt) throw new Error("no kernel " + name);
    sel.value = opt.value;
    sel.dispatchEvent(new Event("change"));
  };
  const hover = (el) => el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
  const visible = (id) => !q("#" + id).classList.contains("hidden");
  function step(name, f) {
    try { R.steps.push(Object.assign({ name }, f())); } catch (e) { R.errors.push(name + ": " + e.message); }
  }
  R.kernels = qa("#kernel option").map((o) => o.textContent);
  R.load_ms = Math.round(performance.now());

  step("pipeline", () => {
    pick("matmul");
    click('[data-mode="pipeline"]');
    click('[data-target="cpu"]');
    const out = { visible: visible("pipeline-view"), stages: {} };
    for (const s of ["source", "te", "schedule", "tir", "code"]) {
      click('[data-stage="' + s + '"]');
      out.stages[s] = text("#stage-pane").slice(0, 4000);
    }
    // Hover every linked source line: the generated code lines it lights up.
    click('[data-stage="code"]');
    let best = 0, bestLine = null;
    for (const l of qa('pre[data-kind="source"] .l.link')) {
      hover(l);
      const n = qa('#stage-pane pre .l.hl, #stage-pane pre .l.hl-body').length;
      if (n > best) { best = n; bestLine = l.textContent.trim(); }
    }
    out.code_lines_lit = best;
    out.code_line_source = bestLine;
    click('[data-stage="tir"]');
    let tirBest = 0;
    for (const l of qa('pre[data-kind="source"] .l.link')) {
      hover(l);
      tirBest = Math.max(tirBest, qa('#stage-pane pre .l.hl, #stage-pane pre .l.hl-body').length);
    }
    out.tir_lines_lit = tirBest;
    // A schedule statement that vectorizes: what it lights up in the TIR.
    const vec = qa('pre[data-kind="source"] .l.link').find((l) => /vectorize/.test(l.textContent));
    if (vec) { hover(vec); out.vectorize_lit = qa('#stage-pane pre .l.hl').map((l) => l.textContent).slice(0, 3); }
    click('[data-target="cuda"]');
    click('[data-stage="code"]');
    out.cuda_code = text("#stage-pane").slice(0, 3000);
    return out;
  });

  step("lowering", () => {
    pick("matmul");
    click('[data-mode="lowering"]');
    click('[data-target="cpu"]');
    const rows = () => qa("#passes tbody tr");
    const out = { visible: visible("lowering-view") };
    out.passes = rows().map((r) => r.textContent);
    out.icons = rows().map((r) => (q(".icon", r) || {}).textContent);
    const cb = q("#hide-unchanged");
    cb.checked = true;
    cb.dispatchEvent(new Event("change"));
    out.rows_hidden_unchanged = rows().length;
    cb.checked = false;
    cb.dispatchEvent(new Event("change"));
    out.rows_all = rows().length;
    // A pass that changes matmul's TIR (flattening): its TIR, then its diff against the
    // previous pass.
    const tir = rows().filter((r) => !r.classList.contains("te"));
    tir.find((r) => r.textContent.includes("flatten_storage")).click();
    out.selected = text("#passes tr.sel");
    out.tir_after = text("#pass-body").slice(0, 2000);
    click('[data-view="diff"]');
    out.diff_summary = text("#diff-summary");
    out.diff_added = qa("#pass-body .l.add").length;
    out.diff_removed = qa("#pass-body .l.del").length;
    out.diff_marks = qa("#pass-body .l.add, #pass-body .l.del").slice(0, 4).map((l) => l.textContent.slice(0, 2));
    // Any two passes: the first TIR pass against the last.
    const sel = q("#compare");
    sel.value = sel.options[1].value;
    sel.dispatchEvent(new Event("change"));
    rows()[rows().length - 1].click();
    click('[data-view="diff"]');
    out.diff_any_summary = text("#diff-summary");
    out.diff_any_changed = qa("#pass-body .l.add, #pass-body .l.del").length;
    click('[data-view="tir"]');
    return out;
  });

  step("search", () => {
    pick("matmul");
    click('[data-mode="lowering"]');
    click('[data-target="cpu"]');
    const box = q("#search");
    box.value = "parallel";
    box.dispatchEvent(new Event("input"));
    const out = { status: text("#search-status"), matches: qa("#lowering-view pre .l.match").length, found_passes: qa("#passes [data-found]").length };
    box.value = "";
    box.dispatchEvent(new Event("input"));
    out.cleared = qa("pre .l.match").length;
    return out;
  });

  step("targets", () => {
    pick("matmul");
    click('[data-mode="targets"]');
    const col = (n) => q('[data-column="' + n + '"]');
    const out = { visible: visible("targets-view"), columns: qa("[data-column]").map((c) => c.dataset.column) };
    for (const n of ["cpu", "cuda", "opencl", "webgpu"]) {
      out[n] = {
        config: text('[data-config="' + n + '"]'),
        code: qa("pre.code", col(n)).map((p) => p.dataset.kind + ":" + p.textContent.slice(0, 20000)).join("\n"),
        loops: qa("details.loop > summary", col(n)).length,
        loop0: (q("details.loop > summary", col(n)) || {}).textContent,
      };
    }
    return out;
  });

  step("bad kernels", () => {
    pick("mistaken_schedule");
    click('[data-mode="pipeline"]');
    click('[data-target="cpu"]');
    click('[data-stage="tir"]');
    const out = { error: qa("#pipeline-view .error").map((e) => e.textContent), err_lines: qa('pre[data-kind="source"] .l.err').map((l) => l.dataset.n + ":" + l.textContent.trim()) };
    click('[data-target="cuda"]');
    out.cuda_tir = text("#stage-pane").slice(0, 300);
    pick("mistaken_tensor");
    out.frontend_error = qa("#pipeline-view .error").map((e) => e.textContent);
    out.frontend_err_lines = qa('pre[data-kind="source"] .l.err').map((l) => l.dataset.n + ":" + l.textContent.trim());
    pick("fine_after_mistakes");
    click('[data-target="cpu"]');
    click('[data-stage="code"]');
    out.after = text("#stage-pane").slice(0, 300);
    return out;
  });

  // Every kernel, every mode and target: no exception, something shown.
  step("every kernel", () => {
    const sel = q("#kernel");
    let shown = 0;
    for (const o of qa("option", sel)) {
      sel.value = o.value;
      sel.dispatchEvent(new Event("change"));
      for (const m of ["pipeline", "lowering", "targets"]) {
        click('[data-mode="' + m + '"]');
        for (const t of m === "targets" ? ["cpu"] : ["cpu", "cuda", "opencl"]) {
          if (m !== "targets") click('[data-target="' + t + '"]');
          if (q("#" + m + "-view").textContent.length > 50) shown++;
        }
      }
    }
    return { shown, expected: qa("option", sel).length * 7 };
  });

  const pre = document.createElement("pre");
  pre.id = "test-results";
  pre.textContent = JSON.stringify(R);
  document.body.append(pre);
})();
