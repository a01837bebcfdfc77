"""What happens before the first item is collected: the options registered on pytest's parser (with
the help that names their choices, defaults and twins), and the rootdir and ini file decided
from where pytest runs."""
