"""The floor's settings and the campaigns' over them (decisions.md D1; docs/operations/campaigns.md).

config.dialer           DialerConfig, sales_dialer_config read with the caps and restrictions
config.campaign_config  the campaigns attached to the config where it is loaded (Campaign, attach)
config.campaign_settings a campaign's settings and their one validation
config.calendars        a campaign's calendar (open hours, restricted dates, start and end)
config.work_window      work_start-work_end, or a campaign's calendar
config.ranges           the bounds of the settings

May import core and the plumbing; never the rules that read the config.
"""
