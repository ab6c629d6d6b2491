// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco job type: bake Articulate's IK chains in .blend files, one task per file.
// Copy this file into the Manager's `scripts/` folder and restart it. Each task runs
//   <exe> <exe_args> <articulate_dir>/cli.py -- bake FILE --armature A --from-constraints
//       --frames F --solver S --out-dir OUTPUT_DIR --report-dir REPORT_DIR
// (IK constraints become chains first; on an armature without them it converts nothing and
// bakes the chains it has) and writes OUTPUT_DIR/<name>.blend and REPORT_DIR/<name>.json. The exit code is cli.py's:
// 0 every frame reached; 3 some frames missed (the task fails; its .blend and report are
// written); 2 bad input such as a corrupt file; 1 any other error.

const SOLVERS = ["chain", "auto", "fabrik", "ccd", "dls", "two_bone"];

const JOB_TYPE = {
  label: "Articulate Bake",
  description: "Bake Articulate IK chains headless, one task per .blend file",
  settings: [
    { key: "blendfile", type: "string", visible: "web",
      description: "The submitted .blend file (filled in by Flamenco's add-on)" },
    { key: "blendfiles", type: "string", visible: "submission",
      description: "More .blend files to bake, separated by ';' or new lines (paths as the workers see them)" },
    { key: "armature", type: "string", required: true,
      eval: "C.object.name if C.object and C.object.type == 'ARMATURE' else ''",
      description: "Name of the armature object to bake in every file" },
    { key: "frames", type: "string", required: true, default: "scene",
      eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
      description: "Frame range such as 1-250 or 1-250:2, or 'scene' for each file's own range" },
    { key: "solver", type: "string", required: true, default: "chain", choices: SOLVERS,
      description: "Solver for every chain, or 'chain' to keep each chain's own" },
    { key: "output_dir", type: "string", subtype: "dir_path", required: true,
      description: "Folder for the baked files (<name>.blend)" },
    { key: "report_dir", type: "string", subtype: "dir_path", required: true,
      description: "Folder for the JSON reports (<name>.json)" },
    { key: "articulate_dir", type: "string", subtype: "dir_path", required: true,
      description: "The Articulate add-on folder (it holds cli.py), as the workers see it" },
    { key: "exe", type: "string", required: true, default: "{blender}", visible: "submission",
      description: "Blender, or a Python with the bpy module" },
    { key: "exe_args", type: "string", default: "-b --factory-startup --python-exit-code 1 --python",
      visible: "submission",
      description: "Arguments before cli.py: Blender's defaults; empty for a Python with the bpy module" },
  ],
};

function compileJob(job) {
  const settings = job.settings;
  const files = blendFiles(settings);
  const stems = new Set();
  for (const file of files) {
    const stem = path.stem(file);
    if (stems.has(stem)) {
      throw `two files are named ${stem}.blend: their outputs would overwrite each other`;
    }
    stems.add(stem);
  }
  for (const file of files) {
    const task = author.Task(`bake-${path.basename(file)}`, "blender");
    task.addCommand(author.Command("exec", { exe: settings.exe, args: bakeArgs(settings, file) }));
    job.addTask(task);
  }
}

// The submitted file, then the listed ones, each once, in order.
function blendFiles(settings) {
  const listed = (settings.blendfiles || "").split(/[;\n]/).map((f) => f.trim());
  const files = [];
  for (const file of [settings.blendfile || "", ...listed]) {
    if (file !== "" && !files.includes(file)) files.push(file);
  }
  if (files.length === 0) throw "no .blend file to bake: set blendfile or blendfiles";
  return files;
}

// cli.py's arguments for one file; `--` ends Blender's own options (Python ignores it).
function bakeArgs(settings, file) {
  const before = (settings.exe_args || "").split(" ").filter((a) => a !== "");
  return before.concat([
    `${settings.articulate_dir}/cli.py`, "--", "bake", file,
    "--armature", settings.armature,
    "--from-constraints",
    "--frames", settings.frames,
    "--solver", settings.solver,
    "--out-dir", settings.output_dir,
    "--report-dir", settings.report_dir,
  ]);
}
