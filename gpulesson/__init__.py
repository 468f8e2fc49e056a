# gpulesson
