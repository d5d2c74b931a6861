// Importing a backend module registers it. One line per backend; order of precedence is the
// `order` each registration gives, not the order of these lines.
import './time.js';
import './powercap/index.js';
import './cpuinfo/index.js';
import './procfs/index.js';
import './cpufreq/index.js';
import './nvml/index.js';
import './amdsmi/index.js';
import './msr/index.js';
import './hwmon/index.js';
