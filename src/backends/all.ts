// Importing a backend module registers it. One line per backend; order of precedence is the
// `order` each registration gives, not the order of these lines.
import './time.js';
