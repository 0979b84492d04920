// The as-of slider: it moves over the days when something changed (the activity bars);
// its value fills the as_of box and submits the search. Without script, the box works.
document.addEventListener("DOMContentLoaded", () => {
  const slider = document.getElementById("when");
  const box = document.getElementById("as_of");
  if (!slider || !box) return;
  const days = JSON.parse(slider.dataset.days || "[]");
  const endOf = (start) => {
    const t = new Date(start);
    t.setUTCDate(t.getUTCDate() + 1);
    t.setUTCMilliseconds(-1);
    return t.toISOString().replace(/\.\d+Z$/, ".999999Z");
  };
  if (box.value) {
    const i = days.findIndex((d) => endOf(d) >= box.value);
    if (i >= 0) slider.value = i;
  }
  slider.addEventListener("input", () => {
    const i = Number(slider.value);
    box.value = i >= days.length ? "" : endOf(days[i]);
  });
  slider.addEventListener("change", () => document.getElementById("search").submit());
});
