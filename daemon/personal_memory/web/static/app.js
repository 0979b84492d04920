// The as-of slider: one position per bar of the activity chart above it (an hour, day,
// week, month or year in which something was learnt) and a last one for everything known.
// Its value fills the as_of box with the period's last day (a day as a cutoff means its
// end) or an hour's last moment, says which moment that is, and submits the search.
// Without script, the box works.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("search");
  const slider = document.getElementById("when");
  const box = document.getElementById("as_of");
  const label = document.getElementById("when-label");
  // Back to this page from the browser's cache: the form and the label as the page was
  // served (its URL's search), not as the slider or the keyboard left them.
  const served = label ? label.textContent : "";
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted || !form) return;
    form.reset();
    if (slider) slider.value = slider.getAttribute("value");
    if (label) label.textContent = served;
  });
  if (!slider || !box) return;
  const days = JSON.parse(slider.dataset.days || "[]");
  const labels = JSON.parse(slider.dataset.labels || "[]");
  // inset like the chart's first and last slots, so each position sits under its bar (the
  // thumb's centre travels half a thumb inside the track's ends)
  const inset = Number(slider.dataset.inset || 0);
  slider.style.marginLeft = `calc(${inset}% - 8px)`;
  slider.style.width = `calc(${100 - 2 * inset}% + 16px)`;
  slider.addEventListener("input", () => {
    const i = Number(slider.value);
    box.value = i >= days.length ? "" : days[i];
    if (label) {
      // an hour's cutoff is its last moment (a first day's history is shown by the hour)
      const moment = days[i] && days[i].includes("T")
        ? `as of ${days[i].slice(0, 19).replace("T", " ")} UTC` : `as of the end of ${days[i]} (UTC)`;
      label.textContent = i >= days.length ? "everything known"
        : moment + (labels[i] !== days[i] ? ` · ${labels[i]}` : "");
    }
  });
  // A step by keyboard submits too: the page it loads gives the slider the focus back
  // (not the search box), so the next arrow key steps again.
  slider.addEventListener("change", () => {
    sessionStorage.setItem("focus", "when");
    form.submit();
  });
  if (sessionStorage.getItem("focus") === "when") {
    sessionStorage.removeItem("focus");
    slider.focus();
  }
});
