# Type stubs of rmm.pylibrmm.helper.

import re

pattern: re.Pattern[str]
